package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rewriteTarball rewrites the tarball at path with its entries changed by
// change (headers written as they are), and the release's checksums
// again, so that only what change did is wrong (and what follows from
// it: the SBOM's and packages' files no longer match).
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
		if e.hdr.Typeflag == tar.TypeDir || e.hdr.Typeflag == tar.TypeSymlink {
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
	resum(t, filepath.Dir(path))
}

// resum writes the checksums of the test release in dir again, for the
// artifacts it still has.
func resum(t *testing.T, dir string) {
	t.Helper()
	var names, tars []string
	for _, n := range artifacts(testVersion, defaultArches) {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			names = append(names, n)
			if strings.HasSuffix(n, ".tar.gz") {
				tars = append(tars, n)
			}
		}
	}
	if _, err := writeChecksums(dir, names, tars); err != nil {
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

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, n := range listDir(t, src) {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestVerifyRelease(t *testing.T) {
	dir := fakeRelease(t, defaultArches)
	if err := verifyRelease(dir, testVersion, defaultArches, testMtime); err != nil {
		t.Fatalf("verifyRelease of a good release: %v", err)
	}
	const v = "0.1.0-rc.1-3-g0123456789ab-dirty"
	const pv = "0.1.0~rc.1+3.g0123456789ab.dirty-1"
	var want []string
	for _, arch := range defaultArches {
		rpm := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
		for _, base := range []string{"containerd-" + strings.TrimPrefix(containerdVersion, "v") + "-nrinet." + v, "cri-o-" + strings.TrimPrefix(crioVersion, "v") + "-nrinet." + v, "nrinet-" + v} {
			base += "-linux-" + arch
			want = append(want, base+".cdx.json", base+".tar.gz", base+".tar.gz.sha256sum")
		}
		for _, name := range []string{"containerd-nrinet", "cri-o-nrinet", "nrinet"} {
			want = append(want, name+"_"+pv+"_"+arch+".deb", name+"-"+pv+"."+rpm+".rpm")
		}
	}
	want = append(want, "SHA256SUMS")
	slices.Sort(want)
	if have := listDir(t, dir); !slices.Equal(have, want) {
		t.Errorf("release files:\n%s\nwant\n%s", sprintLines(have), sprintLines(want))
	}

	t.Run("reproducible", func(t *testing.T) {
		// The same files and time, staged again, give the same bytes.
		again := fakeRelease(t, defaultArches)
		for _, n := range want {
			a, _ := os.ReadFile(filepath.Join(dir, n))
			b, _ := os.ReadFile(filepath.Join(again, n))
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs between two releases of the same files", n)
			}
		}
	})
}

func TestVerifyReleaseFinds(t *testing.T) {
	good := fakeRelease(t, defaultArches)
	nrinet := productNamed("nrinet")
	nrinetAMD64 := tarballName(nrinet, testVersion, "amd64")
	const (
		nrinetd = "bin/nrinetd"
		unit    = "lib/systemd/system/nrinetd.service"
		license = "share/doc/nrinet/LICENSE"
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
		{name: "extra file", want: "share/zz: not part of the layout",
			change: func(es []entry) []entry {
				h := *es[len(es)-1].hdr
				h.Name = "share/zz"
				return append(es, entry{hdr: &h, data: []byte("x")})
			}},
		{name: "file under /etc", want: "etc/nrinetd/config.toml: not part of the layout",
			change: func(es []entry) []entry {
				h := *es[len(es)-1].hdr
				h.Name = "etc/nrinetd/config.toml"
				return append(es, entry{hdr: &h, data: []byte("x")})
			}},
		{name: "rooted at /", want: "usr/local/bin/nri-cni: not part of the layout",
			change: func(es []entry) []entry {
				for _, e := range es {
					e.hdr.Name = "usr/local/" + e.hdr.Name
				}
				return es
			}},
		{name: "mode", want: unit + ": mode 0755, want 0644",
			change: func(es []entry) []entry {
				es[byName(t, es, unit)].hdr.Mode = 0o755
				return es
			}},
		{name: "directory entry", want: "bin: type '5', want a regular file",
			change: func(es []entry) []entry {
				h := *es[0].hdr
				h.Name, h.Typeflag, h.Mode = "bin", tar.TypeDir, 0o755
				return append([]entry{{hdr: &h}}, es...)
			}},
		{name: "symlink", want: "type '2', want a regular file",
			change: func(es []entry) []entry {
				h := *es[0].hdr
				h.Name, h.Typeflag, h.Linkname = "bin/nri", tar.TypeSymlink, "nrinetd"
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
		{name: "time", want: nrinetd + ": dated 2026-12-01 01:00:00 +0000 UTC, want 2026-12-01 00:00:00 +0000 UTC",
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
		{name: "absolute name", want: `"/bin/nri-cni": not a clean relative name`,
			change: func(es []entry) []entry {
				es[0].hdr.Name = "/" + es[0].hdr.Name
				return es
			}},
		{name: "changed binary", want: "the tarball " + nrinetAMD64 + " with SHA-256",
			change: func(es []entry) []entry {
				i := byName(t, es, nrinetd)
				es[i].data = append(slices.Clone(es[i].data), 0)
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
			dir := copyDir(t, good)
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
			err := verifyRelease(dir, version, defaultArches, testMtime)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verifyRelease: %v\nwant %q in it", err, tc.want)
			}
		})
	}
}

func TestArtifactNames(t *testing.T) {
	// The runtimes' versions without their v, as tarballs spell them.
	ctrd, crio := strings.TrimPrefix(containerdVersion, "v"), strings.TrimPrefix(crioVersion, "v")
	for _, tc := range []struct {
		version, arch, nrinet, containerd, crio, reported, commit string
	}{
		{"v0.1.0", "amd64", "nrinet-0.1.0-linux-amd64", "containerd-" + ctrd + "-nrinet.0.1.0-linux-amd64",
			"cri-o-" + crio + "-nrinet.0.1.0-linux-amd64", containerdVersion + "+nrinet.0.1.0", "+nrinet.0.1.0"},
		{"v1.2.3-rc.1", "arm64", "nrinet-1.2.3-rc.1-linux-arm64", "containerd-" + ctrd + "-nrinet.1.2.3-rc.1-linux-arm64",
			"cri-o-" + crio + "-nrinet.1.2.3-rc.1-linux-arm64", containerdVersion + "+nrinet.1.2.3-rc.1", "+nrinet.1.2.3-rc.1"},
		{"v0.0.0-371-g5e7b2da505bb-dirty", "amd64", "nrinet-0.0.0-371-g5e7b2da505bb-dirty-linux-amd64",
			"containerd-" + ctrd + "-nrinet.0.0.0-371-g5e7b2da505bb-dirty-linux-amd64",
			"cri-o-" + crio + "-nrinet.0.0.0-371-g5e7b2da505bb-dirty-linux-amd64",
			containerdVersion + "+nrinet.0.0.0-371-g5e7b2da505bb-dirty", "+nrinet.0.0.0-371-g5e7b2da505bb"},
	} {
		for _, c := range []struct{ product, want string }{
			{"nrinet", tc.nrinet}, {"containerd", tc.containerd}, {"crio", tc.crio},
		} {
			p := productNamed(c.product)
			if got := tarballName(p, tc.version, tc.arch); got != c.want+".tar.gz" {
				t.Errorf("%s tarball of %s %s = %s, want %s.tar.gz", c.product, tc.version, tc.arch, got, c.want)
			}
			if got := sbomName(p, tc.version, tc.arch); got != c.want+".cdx.json" {
				t.Errorf("%s SBOM of %s %s = %s, want %s.cdx.json", c.product, tc.version, tc.arch, got, c.want)
			}
		}
		if got := containerdReportedVersion(tc.version); got != tc.reported {
			t.Errorf("containerd's version for %s = %s, want %s", tc.version, got, tc.reported)
		}
		if got := crioReportedCommit(tc.version); got != tc.commit {
			t.Errorf("CRI-O's commit for %s ends %s, want %s", tc.version, got, tc.commit)
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

func TestProductsLayout(t *testing.T) {
	// Every product's files are in name order (as the tarballs hold
	// them) and in the directories a release has under /usr/local; no two
	// products share a file, since two packages may not own one.
	owner := map[string]string{}
	for _, p := range products {
		for i, f := range p.files {
			if i > 0 && p.files[i-1].name >= f.name {
				t.Errorf("%s: %s after %s", p.name, f.name, p.files[i-1].name)
			}
			top, _, _ := strings.Cut(f.name, "/")
			if !slices.Contains([]string{"bin", "lib", "share"}, top) {
				t.Errorf("%s: %s is not under bin/, lib/ or share/", p.name, f.name)
			}
			if f.elf != (top == "bin") || (f.mode == 0o755) != f.elf {
				t.Errorf("%s: %s: elf %v mode %#o", p.name, f.name, f.elf, f.mode)
			}
			if o, ok := owner[f.name]; ok {
				t.Errorf("%s is in both %s and %s", f.name, o, p.name)
			}
			owner[f.name] = p.name
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

func TestSourceDate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1796083200")
	got, err := sourceDate(t.Context())
	if want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("sourceDate with SOURCE_DATE_EPOCH=1796083200: %s, %v; want %s", got, err, want)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := sourceDate(t.Context()); err == nil {
		t.Error("sourceDate accepted SOURCE_DATE_EPOCH=yesterday")
	}
}
