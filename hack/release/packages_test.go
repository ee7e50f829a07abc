package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPackageVersion(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.1.0", "0.1.0"},
		{"v1.2.3-rc.1", "1.2.3~rc.1"},
		{"v0.1.0-dirty", "0.1.0+0.dirty"},
		{"v0.1.0-3-g0123456789ab", "0.1.0+3.g0123456789ab"},
		{"v0.1.0-3-g0123456789ab-dirty", "0.1.0+3.g0123456789ab.dirty"},
		{"v0.1.0-rc.1-3-g0123456789ab-dirty", "0.1.0~rc.1+3.g0123456789ab.dirty"},
		{"v0.0.0-371-g5e7b2da505bb", "0.0.0+371.g5e7b2da505bb"},
		{"v0.0.0-devel", "0.0.0~devel"},
		{"v0.0.0-runbook.ab12", "0.0.0~runbook.ab12"},
		{"v1.0.0-alpha-2", "1.0.0~alpha.2"},
	} {
		if got := packageVersion(tc.version); got != tc.want {
			t.Errorf("packageVersion(%q) = %q, want %q", tc.version, got, tc.want)
		}
		if strings.ContainsAny(packageVersion(tc.version), "-_ ") {
			t.Errorf("packageVersion(%q) = %q: a character rpm refuses", tc.version, packageVersion(tc.version))
		}
	}

	t.Run("dpkg orders them as hack/version.sh's versions", func(t *testing.T) {
		dpkg, err := exec.LookPath("dpkg")
		if err != nil {
			t.Skip("no dpkg")
		}
		// Oldest first: a pre-release, the release, commits after it, the
		// next release.
		order := []string{
			"v0.1.0-rc.1", "v0.1.0-rc.1-3-g0123456789ab", "v0.1.0-rc.2", "v0.1.0",
			"v0.1.0-dirty", "v0.1.0-3-g0123456789ab", "v0.1.0-3-g0123456789ab-dirty", "v0.1.0-12-gfedcba987654", "v0.1.1",
		}
		for i := 1; i < len(order); i++ {
			a, b := packageVersion(order[i-1])+"-"+packageRelease, packageVersion(order[i])+"-"+packageRelease
			if err := exec.Command(dpkg, "--compare-versions", a, "lt", b).Run(); err != nil {
				t.Errorf("dpkg --compare-versions %s lt %s (%s, %s): %v", a, b, order[i-1], order[i], err)
			}
		}
	})
}

func TestPackages(t *testing.T) {
	dir := fakeRelease(t, defaultArches)
	for _, arch := range defaultArches {
		for _, p := range products {
			tarball := filepath.Join(dir, tarballName(p, testVersion, arch))
			entries, err := readTarball(tarball)
			if err != nil {
				t.Fatal(err)
			}
			deb := filepath.Join(dir, packageFileName(p, testVersion, arch, "deb"))
			rpm := filepath.Join(dir, packageFileName(p, testVersion, arch, "rpm"))
			t.Run(filepath.Base(deb), func(t *testing.T) {
				got, err := readDeb(deb)
				if err != nil {
					t.Fatal(err)
				}
				checkSameFiles(t, got, entries)
				if got.arch != arch || got.version != packageVersion(testVersion) || !slices.Equal(got.depends, p.pkg.depends["deb"]) {
					t.Errorf("%s %s %s depends %q", got.name, got.version, got.arch, got.depends)
				}
				checkDpkgDeb(t, deb, p, arch, entries)
			})
			t.Run(filepath.Base(rpm), func(t *testing.T) {
				got, err := readRPM(rpm)
				if err != nil {
					t.Fatal(err)
				}
				checkSameFiles(t, got, entries)
				if got.arch != rpmArch[arch] || got.license != license || got.release != packageRelease {
					t.Errorf("%s %s-%s %s license %s", got.name, got.version, got.release, got.arch, got.license)
				}
				checkRPMQuery(t, rpm, p, entries)
			})
		}
	}
}

// checkSameFiles checks that a package holds exactly the tarball's files
// (entries) under /usr/local, byte for byte, with their modes, owned by
// root and dated alike.
func checkSameFiles(t *testing.T, got *pkg, entries []entry) {
	t.Helper()
	var names, want []string
	for _, e := range got.files {
		names = append(names, e.hdr.Name)
	}
	for _, e := range entries {
		want = append(want, "usr/local/"+e.hdr.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("files:\n%s\nwant the tarball's under /usr/local:\n%s", sprintLines(names), sprintLines(want))
	}
	for i, e := range got.files {
		w := entries[i]
		if !bytes.Equal(e.data, w.data) || e.hdr.Mode != w.hdr.Mode || e.hdr.Uname != "root" || e.hdr.Gname != "root" || !e.hdr.ModTime.Equal(testMtime) {
			t.Errorf("%s: mode %#o, %s:%s, %s, %d bytes; want the tarball's mode %#o, root:root, %s, %d bytes",
				e.hdr.Name, e.hdr.Mode, e.hdr.Uname, e.hdr.Gname, e.hdr.ModTime, len(e.data), w.hdr.Mode, testMtime, len(w.data))
		}
	}
}

// checkDpkgDeb reads a .deb with dpkg-deb, where installed: its fields and
// file list agree with what readDeb reads.
func checkDpkgDeb(t *testing.T, deb string, p product, arch string, entries []entry) {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Log("no dpkg-deb: not cross-checked")
		return
	}
	fields := parseControl([]byte(mustRun(t, "", "dpkg-deb", "-f", deb)))
	for k, want := range map[string]string{
		"Package": p.pkg.name, "Version": packageVersion(testVersion) + "-" + packageRelease, "Architecture": arch,
		"Maintainer": maintainer, "Homepage": homepage, "Section": "admin", "Priority": "optional",
		"Depends": strings.Join(p.pkg.depends["deb"], ", "), "Suggests": strings.Join(p.pkg.suggests, ", "),
	} {
		if fields[k] != want {
			t.Errorf("dpkg-deb -f: %s: %q, want %q", k, fields[k], want)
		}
	}
	if !strings.HasPrefix(fields["Description"], p.pkg.summary) {
		t.Errorf("dpkg-deb -f: Description: %q, want the summary first", fields["Description"])
	}
	// dpkg-deb -c: "-rwxr-xr-x root/root 1234 2026-12-01 00:00 ./usr/local/bin/x".
	var files []string
	for line := range strings.SplitSeq(strings.TrimSpace(mustRun(t, "", "dpkg-deb", "-c", deb)), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || f[1] != "root/root" {
			t.Errorf("dpkg-deb -c: %q", line)
			continue
		}
		if f[0][0] == '-' {
			files = append(files, strings.TrimPrefix(f[5], "./"))
		}
	}
	var want []string
	for _, e := range entries {
		want = append(want, "usr/local/"+e.hdr.Name)
	}
	if !slices.Equal(files, want) {
		t.Errorf("dpkg-deb -c lists:\n%s\nwant\n%s", sprintLines(files), sprintLines(want))
	}
}

// checkRPMQuery reads an .rpm with rpm, where installed: its name and
// file list agree with what readRPM reads.
func checkRPMQuery(t *testing.T, file string, p product, entries []entry) {
	t.Helper()
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Log("no rpm: not cross-checked")
		return
	}
	out := mustRun(t, "", "rpm", "-qp", "--nosignature", "--qf", "%{NAME} %{VERSION}-%{RELEASE} %{LICENSE}\\n", file)
	if want := p.pkg.name + " " + packageVersion(testVersion) + "-" + packageRelease + " " + license + "\n"; out != want {
		t.Errorf("rpm -qp: %q, want %q", out, want)
	}
	var want []string
	for _, e := range entries {
		want = append(want, prefix+"/"+e.hdr.Name)
	}
	list := strings.Split(strings.TrimSpace(mustRun(t, "", "rpm", "-qpl", "--nosignature", file)), "\n")
	if !slices.Equal(list, want) {
		t.Errorf("rpm -qpl lists:\n%s\nwant\n%s", sprintLines(list), sprintLines(want))
	}
}

func TestCheckPackageFinds(t *testing.T) {
	dir := fakeRelease(t, []string{"amd64"})
	nrinet, containerd := productNamed("nrinet"), productNamed("containerd")
	entries, err := readTarball(filepath.Join(dir, tarballName(nrinet, testVersion, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range packageFormats {
		t.Run(format, func(t *testing.T) {
			good := filepath.Join(dir, packageFileName(nrinet, testVersion, "amd64", format))
			if err := checkPackage(good, format, nrinet, testVersion, "amd64", entries); err != nil {
				t.Fatalf("checkPackage of a good package: %v", err)
			}
			// Another product's package in its place.
			other := filepath.Join(dir, packageFileName(containerd, testVersion, "amd64", format))
			err := checkPackage(other, format, nrinet, testVersion, "amd64", entries)
			if err == nil || !strings.Contains(err.Error(), "package containerd-nrinet") || !strings.Contains(err.Error(), "files differ from the tarball's") {
				t.Errorf("checkPackage of containerd's package as nrinet's: %v", err)
			}
			// A package of one changed file.
			changed := slices.Clone(entries)
			i := slices.IndexFunc(changed, func(e entry) bool { return e.hdr.Name == "share/nrinet/10-podnet.conf" })
			stage := t.TempDir()
			var fs []file
			for j, e := range changed {
				data := e.data
				if j == i {
					data = []byte("changed\n")
				}
				p := filepath.Join(stage, filepath.FromSlash(e.hdr.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				fs = append(fs, file{name: e.hdr.Name, mode: e.hdr.Mode, path: p})
			}
			out := t.TempDir()
			name, err := writePackage(out, nrinet, testVersion, "amd64", format, fs, testMtime)
			if err != nil {
				t.Fatal(err)
			}
			err = checkPackage(filepath.Join(out, name), format, nrinet, testVersion, "amd64", entries)
			if err == nil || !strings.Contains(err.Error(), "share/nrinet/10-podnet.conf: package") {
				t.Errorf("checkPackage of a package with a changed file: %v", err)
			}
		})
	}
}

// checkDpkgInstall installs each .deb of the release in dir for arch
// with dpkg into a new root of its own (dpkg --root, its database there;
// the packages' dependencies, runc and the like, are not in it), and
// checks that dpkg put exactly the tarball's files under /usr/local and
// knows them as the package's; then removes each and checks that nothing
// of it is left. Nothing is installed on this machine.
func checkDpkgInstall(t *testing.T, dir, version, arch string) {
	t.Helper()
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg")
	}
	if os.Getuid() != 0 {
		t.Skip("dpkg installs as root")
	}
	root := t.TempDir()
	admin := filepath.Join(root, "var", "lib", "dpkg")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, admin, map[string]string{"status": "", "available": ""})
	dpkg := func(args ...string) string {
		t.Helper()
		return mustRun(t, "", "dpkg", append([]string{"--root=" + root, "--log=/dev/null", "--force-depends"}, args...)...)
	}
	for _, p := range products {
		entries, err := readTarball(filepath.Join(dir, tarballName(p, version, arch)))
		if err != nil {
			t.Fatal(err)
		}
		deb := filepath.Join(dir, packageFileName(p, version, arch, "deb"))
		dpkg("-i", deb)
		status := parseControl([]byte(dpkg("-s", p.pkg.name)))
		if status["Status"] != "install ok installed" || status["Version"] != packageVersion(version)+"-"+packageRelease {
			t.Errorf("dpkg -s %s: Status %q, Version %q", p.pkg.name, status["Status"], status["Version"])
		}
		listed := map[string]bool{}
		for l := range strings.SplitSeq(dpkg("-L", p.pkg.name), "\n") {
			listed[l] = true
		}
		for _, e := range entries {
			name := prefix + "/" + e.hdr.Name
			got, err := os.ReadFile(filepath.Join(root, name))
			if err != nil || !bytes.Equal(got, e.data) {
				t.Errorf("%s installed by dpkg: %v, or not the tarball's", name, err)
			}
			if info, err := os.Stat(filepath.Join(root, name)); err == nil && int64(info.Mode().Perm()) != e.hdr.Mode {
				t.Errorf("%s installed by dpkg: mode %v, want %#o", name, info.Mode(), e.hdr.Mode)
			}
			if !listed[name] {
				t.Errorf("dpkg -L %s does not list %s", p.pkg.name, name)
			}
		}
	}
	// Every file dpkg wrote is one of a tarball's.
	var written []string
	filepath.WalkDir(filepath.Join(root, "usr"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, strings.TrimPrefix(p, root))
		}
		return err
	})
	var want []string
	for _, p := range products {
		for _, f := range p.files {
			want = append(want, prefix+"/"+f.name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(written, want) {
		t.Errorf("dpkg wrote:\n%s\nwant the tarballs' files:\n%s", sprintLines(written), sprintLines(want))
	}
	for _, p := range products {
		dpkg("-r", p.pkg.name)
	}
	written = nil
	filepath.WalkDir(filepath.Join(root, "usr", "local"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return nil
	})
	if len(written) > 0 {
		t.Errorf("left after dpkg -r:\n%s", sprintLines(written))
	}
}
