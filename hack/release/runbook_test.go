package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRunbook follows docs/install.md's steps for the files on a release
// of fake binaries, into a temporary root instead of a node's /: checks
// the download with sha256sum, unpacks every tarball with
// `tar -C /usr/local -xzf`, runs each unpacked binary's -version, copies
// the drop-ins from share/nrinet to where the runtimes read them; then
// unpacks each .deb with dpkg -x beside it and installs it with dpkg
// into a root of its own, and checks that all three hold the same files.
// The real binaries are make release-test's (TestRelease).
func TestRunbook(t *testing.T) {
	arch := runtime.GOARCH
	if _, ok := machines[arch]; !ok {
		t.Skipf("no release for %s", arch)
	}
	dir := fakeRelease(t, []string{arch})
	if _, err := exec.LookPath("sha256sum"); err == nil {
		// Step 1: check the download, as the page writes it.
		mustRun(t, dir, "sha256sum", "-c", sumsFile, "--ignore-missing")
		for _, n := range tarballs(testVersion, []string{arch}) {
			mustRun(t, dir, "sha256sum", "-c", n+sumSuffix)
		}
	}
	root := t.TempDir()
	for _, p := range products {
		unpackUnder(t, filepath.Join(dir, tarballName(p, testVersion, arch)), root)
	}
	local := filepath.Join(root, "usr", "local")

	t.Run("binaries", func(t *testing.T) {
		for _, p := range products {
			for _, f := range p.files {
				if !f.elf {
					continue
				}
				name := filepath.Base(f.name)
				if got, want := output(t, filepath.Join(local, f.name), "-version"), name+" "+testVersion+"\n"; got != want {
					t.Errorf("%s -version: %q, want %q", f.name, got, want)
				}
			}
		}
	})
	t.Run("drop-ins", func(t *testing.T) {
		// Step 2, written for / and run in the root: the drop-ins go from
		// share/nrinet to the directories containerd and CRI-O read.
		for _, c := range []struct{ from, to string }{
			{"share/nrinet/nrinet-network-mode.toml", "etc/containerd/conf.d/nrinet-network-mode.toml"},
			{"share/nrinet/nrinet-network-mode.conf", "etc/crio/crio.conf.d/nrinet-network-mode.conf"},
		} {
			mustRun(t, "", "install", "-D", "-m", "0644", filepath.Join(local, c.from), filepath.Join(root, c.to))
			if !bytes.Equal(readFile(t, filepath.Join(local, c.from)), readFile(t, filepath.Join(root, c.to))) {
				t.Errorf("/%s is not %s", c.to, c.from)
			}
		}
	})
	t.Run("dpkg -x", func(t *testing.T) {
		if _, err := exec.LookPath("dpkg"); err != nil {
			t.Skip("no dpkg")
		}
		x := t.TempDir()
		for _, p := range products {
			mustRun(t, "", "dpkg", "-x", filepath.Join(dir, packageFileName(p, testVersion, arch, "deb")), x)
		}
		got, want := tree(t, filepath.Join(x, "usr", "local")), tree(t, local)
		if !slices.Equal(got, want) {
			t.Errorf("dpkg -x of the packages:\n%s\nthe tarballs:\n%s", sprintLines(got), sprintLines(want))
		}
	})
	t.Run("dpkg -i", func(t *testing.T) {
		checkDpkgInstall(t, dir, testVersion, arch)
	})
}

// tree lists the regular files under dir: each relative name, mode and
// SHA-256, one line each, in name order.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, strings.Join([]string{filepath.ToSlash(rel), info.Mode().String(), sum[:16]}, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}
