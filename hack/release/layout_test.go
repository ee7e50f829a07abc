package main

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const testVersion = "v0.1.0-3-g0123456789ab-dirty"

// fakeRelease writes a release of testVersion for arches into a new
// directory, as run does, with test files in place of the real ones: a
// static ELF header for every binary, a line of text for every other file.
func fakeRelease(t *testing.T, arches []string) string {
	t.Helper()
	out := t.TempDir()
	mtime := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, arch := range arches {
		for _, k := range kinds {
			stage := t.TempDir()
			tree := map[string]string{}
			for _, f := range k.files {
				if f.elf {
					tree[f.name+"*"] = string(staticELF(arch))
				} else {
					tree[f.name] = "text of " + f.name + "\n"
				}
			}
			writeTree(t, stage, tree)
			files, err := stagedFiles(stage)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeTarball(filepath.Join(out, tarballName(k, testVersion, arch)), files, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := writeChecksums(out, artifacts(testVersion, arches)); err != nil {
		t.Fatal(err)
	}
	return out
}

// rewriteTarball rewrites the tarball at path with its entries changed by
// change (headers written as they are), and the release's checksums
// again, so that only what change did is wrong.
func rewriteTarball(t *testing.T, path string, change func([]entry) []entry) {
	t.Helper()
	entries, err := readTarball(path)
	if err != nil {
		t.Fatal(err)
	}
	entries = change(entries)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		e.hdr.Size = int64(len(e.data))
		if e.hdr.Typeflag == tar.TypeDir {
			e.hdr.Size = 0
		}
		if err := tw.WriteHeader(e.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(path)
	var names []string
	for _, n := range artifacts(testVersion, defaultArches) {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			names = append(names, n)
		}
	}
	if _, err := writeChecksums(dir, names); err != nil {
		t.Fatal(err)
	}
}

// byName returns the index of the entry named name.
func byName(t *testing.T, entries []entry, name string) int {
	t.Helper()
	i := slices.IndexFunc(entries, func(e entry) bool { return e.hdr.Name == name })
	if i < 0 {
		t.Fatalf("no entry %s", name)
	}
	return i
}

func TestVerifyRelease(t *testing.T) {
	dir := fakeRelease(t, defaultArches)
	if err := verifyRelease(dir, testVersion, defaultArches); err != nil {
		t.Fatalf("verifyRelease of a good release: %v", err)
	}
	des, _ := os.ReadDir(dir)
	var have []string
	for _, de := range des {
		have = append(have, de.Name())
	}
	want := []string{
		"SHA256SUMS",
		"containerd-2.4.2-nrinet.0.1.0-3-g0123456789ab-dirty-linux-amd64.tar.gz",
		"containerd-2.4.2-nrinet.0.1.0-3-g0123456789ab-dirty-linux-amd64.tar.gz.sha256sum",
		"containerd-2.4.2-nrinet.0.1.0-3-g0123456789ab-dirty-linux-arm64.tar.gz",
		"containerd-2.4.2-nrinet.0.1.0-3-g0123456789ab-dirty-linux-arm64.tar.gz.sha256sum",
		"nrinet-0.1.0-3-g0123456789ab-dirty-linux-amd64.tar.gz",
		"nrinet-0.1.0-3-g0123456789ab-dirty-linux-amd64.tar.gz.sha256sum",
		"nrinet-0.1.0-3-g0123456789ab-dirty-linux-arm64.tar.gz",
		"nrinet-0.1.0-3-g0123456789ab-dirty-linux-arm64.tar.gz.sha256sum",
	}
	if !slices.Equal(have, want) {
		t.Errorf("release files:\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

func TestVerifyReleaseFinds(t *testing.T) {
	nrinetAMD64 := tarballName(kinds[0], testVersion, "amd64")
	const (
		nrinetd = "usr/local/bin/nrinetd"
		unit    = "usr/local/lib/systemd/system/nrinetd.service"
		license = "usr/local/share/doc/nrinet/LICENSE"
	)
	for _, tc := range []struct {
		name   string
		change func([]entry) []entry // applied to nrinet's amd64 tarball
		dir    func(t *testing.T, dir string)
		want   string
	}{
		{name: "missing file", want: nrinetd + " is missing",
			change: func(es []entry) []entry {
				return slices.DeleteFunc(es, func(e entry) bool { return e.hdr.Name == nrinetd })
			}},
		{name: "extra file", want: "usr/local/bin/zz: not part of the layout",
			change: func(es []entry) []entry {
				h := *es[len(es)-1].hdr
				h.Name = "usr/local/bin/zz"
				return append(es, entry{hdr: &h, data: []byte("x")})
			}},
		{name: "mode", want: unit + ": mode 0755, want 0644",
			change: func(es []entry) []entry {
				i := byName(t, es, unit)
				es[i].hdr.Mode = 0o755
				return es
			}},
		{name: "directory entry", want: "usr: type '5', want a regular file",
			change: func(es []entry) []entry {
				h := *es[0].hdr
				h.Name, h.Typeflag, h.Mode = "usr", tar.TypeDir, 0o755
				return append([]entry{{hdr: &h}}, es...)
			}},
		{name: "symlink", want: "type '2', want a regular file",
			change: func(es []entry) []entry {
				h := *es[0].hdr
				h.Name, h.Typeflag, h.Linkname = "usr/local/bin/nri", tar.TypeSymlink, "nrinetd"
				es = append(es, entry{hdr: &h})
				slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.hdr.Name, b.hdr.Name) })
				return es
			}},
		{name: "dynamic binary", want: nrinetd + ": dynamically linked",
			change: func(es []entry) []entry {
				es[byName(t, es, nrinetd)].data = buildELF(elfSpec{machine: machines["amd64"], typ: 2, entry: 1, interp: "/lib64/ld-linux-x86-64.so.2"})
				return es
			}},
		{name: "other architecture", want: nrinetd + ": machine EM_AARCH64, want EM_X86_64",
			change: func(es []entry) []entry {
				es[byName(t, es, nrinetd)].data = staticELF("arm64")
				return es
			}},
		{name: "owner", want: "owned by 1000:0",
			change: func(es []entry) []entry {
				es[0].hdr.Uid, es[0].hdr.Uname = 1000, "me"
				return es
			}},
		{name: "order", want: "not in name order",
			change: func(es []entry) []entry {
				es[0], es[1] = es[1], es[0]
				return es
			}},
		{name: "time", want: nrinetd + ": dated",
			change: func(es []entry) []entry {
				i := byName(t, es, nrinetd)
				es[i].hdr.ModTime = es[i].hdr.ModTime.Add(time.Hour)
				return es
			}},
		{name: "empty text", want: license + ": empty",
			change: func(es []entry) []entry {
				es[byName(t, es, license)].data = nil
				return es
			}},
		{name: "absolute name", want: `"/usr/local/bin/nri-cni": not a clean relative name`,
			change: func(es []entry) []entry {
				es[0].hdr.Name = "/" + es[0].hdr.Name
				return es
			}},
		{name: "stray file", want: "unexpected file NOTES",
			dir: func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"NOTES": "x"}) }},
		{name: "no sum file", want: nrinetAMD64 + sumSuffix + " is missing",
			dir: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, nrinetAMD64+sumSuffix)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "changed after summing", want: "SHA256SUMS: " + nrinetAMD64 + ": sum",
			dir: func(t *testing.T, dir string) {
				f, err := os.OpenFile(filepath.Join(dir, nrinetAMD64), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte{0})
				f.Close()
			}},
		{name: "other version", want: "nrinet-0.1.0-linux-amd64.tar.gz is missing",
			dir: func(t *testing.T, dir string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeRelease(t, defaultArches)
			version := testVersion
			if tc.change != nil {
				rewriteTarball(t, filepath.Join(dir, nrinetAMD64), tc.change)
			}
			if tc.dir != nil {
				tc.dir(t, dir)
			}
			if tc.name == "other version" {
				version = "v0.1.0"
			}
			err := verifyRelease(dir, version, defaultArches)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verifyRelease: %v\nwant %q in it", err, tc.want)
			}
		})
	}
}

func TestTarballNames(t *testing.T) {
	for _, tc := range []struct {
		version, arch, nrinet, containerd, reported string
	}{
		{"v0.1.0", "amd64", "nrinet-0.1.0-linux-amd64.tar.gz", "containerd-2.4.2-nrinet.0.1.0-linux-amd64.tar.gz", "v2.4.2+nrinet.0.1.0"},
		{"v1.2.3-rc.1", "arm64", "nrinet-1.2.3-rc.1-linux-arm64.tar.gz", "containerd-2.4.2-nrinet.1.2.3-rc.1-linux-arm64.tar.gz", "v2.4.2+nrinet.1.2.3-rc.1"},
		{"v0.0.0-371-g5e7b2da505bb-dirty", "amd64", "nrinet-0.0.0-371-g5e7b2da505bb-dirty-linux-amd64.tar.gz",
			"containerd-2.4.2-nrinet.0.0.0-371-g5e7b2da505bb-dirty-linux-amd64.tar.gz", "v2.4.2+nrinet.0.0.0-371-g5e7b2da505bb-dirty"},
	} {
		if got := tarballName(kinds[0], tc.version, tc.arch); got != tc.nrinet {
			t.Errorf("nrinet tarball of %s %s = %s, want %s", tc.version, tc.arch, got, tc.nrinet)
		}
		if got := tarballName(kinds[1], tc.version, tc.arch); got != tc.containerd {
			t.Errorf("containerd tarball of %s %s = %s, want %s", tc.version, tc.arch, got, tc.containerd)
		}
		if got := containerdReportedVersion(tc.version); got != tc.reported {
			t.Errorf("containerd's version for %s = %s, want %s", tc.version, got, tc.reported)
		}
		if err := checkVersion(tc.version); err != nil {
			t.Errorf("checkVersion(%q): %v", tc.version, err)
		}
	}
	for _, bad := range []string{"", "v", "0.1.0", "v0.1.0+meta", "v0.1.0/x", "v0.1 0"} {
		if err := checkVersion(bad); err == nil {
			t.Errorf("checkVersion(%q) accepted it", bad)
		}
	}
}

func TestParse(t *testing.T) {
	var stderr strings.Builder
	o, err := parse([]string{"-version", "v1.0.0"}, &stderr)
	if err != nil || !slices.Equal(o.arches, []string{"amd64", "arm64"}) || o.out != filepath.Join("_output", "release") {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, args := range [][]string{{"-arch", "amd64,amd64"}, {"-arch", "riscv64"}, {"extra"}} {
		if _, err := parse(args, &stderr); err == nil {
			t.Errorf("parse(%q) accepted it", args)
		}
	}
}
