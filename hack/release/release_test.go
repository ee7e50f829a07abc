package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// releaseDir is the release TestRelease checks: NRINET_RELEASE_DIR, which
// make release-test sets to the one make release wrote.
func releaseDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NRINET_RELEASE_DIR")
	if dir == "" {
		t.Skip("NRINET_RELEASE_DIR is not set (make release, then make release-test)")
	}
	return dir
}

// releaseVersion reads the version and architectures of the release in
// dir from its nrinet tarballs' names.
func releaseVersion(t *testing.T, dir string) (string, []string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^nrinet-(.+)-linux-([a-z0-9]+)\.tar\.gz$`)
	version := ""
	var arches []string
	for _, de := range des {
		m := re.FindStringSubmatch(de.Name())
		if m == nil {
			continue
		}
		if version != "" && version != "v"+m[1] {
			t.Fatalf("%s holds releases %s and v%s", dir, version, m[1])
		}
		version = "v" + m[1]
		arches = append(arches, m[2])
	}
	if version == "" {
		t.Fatalf("%s holds no nrinet-*-linux-*.tar.gz", dir)
	}
	slices.SortFunc(arches, func(a, b string) int {
		return slices.Index(defaultArches, a) - slices.Index(defaultArches, b)
	})
	return version, arches
}

// repoRoot is the repository root, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// unpackUnder extracts a tarball into root's /usr/local with tar, as an
// operator does on a node: tar -C /usr/local -xzf.
func unpackUnder(t testing.TB, tarball, root string) {
	t.Helper()
	local := filepath.Join(root, "usr", "local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-C", local, "-xzf", tarball).CombinedOutput(); err != nil {
		t.Fatalf("tar -C %s -xzf %s: %v\n%s", local, tarball, err, out)
	}
}

// output runs a command and returns its standard output.
func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// TestRelease checks the release make release wrote (NRINET_RELEASE_DIR),
// as make release-test runs it: the artifacts, then what this machine can
// run of them, unpacked as docs/install.md says (tar -C /usr/local -xzf),
// and the packages as dpkg installs them.
func TestRelease(t *testing.T) {
	dir := releaseDir(t)
	version, arches := releaseVersion(t, dir)
	t.Logf("release %s for %s in %s", version, arches, dir)

	t.Run("artifacts", func(t *testing.T) {
		if !slices.Equal(arches, defaultArches) {
			t.Errorf("architectures %s, want %s", arches, defaultArches)
		}
		if err := verifyRelease(dir, version, arches, time.Time{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("sha256sum -c", func(t *testing.T) {
		sha, err := exec.LookPath("sha256sum")
		if err != nil {
			t.Skip("no sha256sum")
		}
		files := []string{sumsFile}
		for _, n := range tarballs(version, arches) {
			files = append(files, n+sumSuffix)
		}
		for _, f := range files {
			cmd := exec.Command(sha, "--strict", "-c", f)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("sha256sum --strict -c %s: %v\n%s", f, err, out)
			}
		}
	})

	if !slices.Contains(arches, runtime.GOARCH) {
		t.Skipf("no %s tarballs to run here", runtime.GOARCH)
	}
	root := t.TempDir()
	for _, p := range products {
		unpackUnder(t, filepath.Join(dir, tarballName(p, version, runtime.GOARCH)), root)
	}
	local := filepath.Join(root, "usr", "local")
	bin := filepath.Join(local, "bin")

	t.Run("versions", func(t *testing.T) {
		for _, c := range []string{"nrinetd", "nri-podnet", "nri-cni"} {
			if got, want := output(t, filepath.Join(bin, c), "-version"), c+" "+version+"\n"; got != want {
				t.Errorf("%s -version: %q, want %q", c, got, want)
			}
		}
		reported := containerdReportedVersion(version)
		for _, c := range []struct{ name, flag string }{
			{"containerd", "--version"}, {"ctr", "--version"}, {"containerd-shim-runc-v2", "-v"},
		} {
			got := output(t, filepath.Join(bin, c.name), c.flag)
			if !strings.Contains(got, " "+reported+"\n") && !strings.Contains(got, " "+reported+" ") {
				t.Errorf("%s %s: %q, want version %s", c.name, c.flag, got, reported)
			}
		}
		got := output(t, filepath.Join(bin, "crio"), "version")
		commit := regexp.MustCompile(`(?m)^GitCommit:\s+(\S+)$`).FindStringSubmatch(got)
		if !strings.Contains(got, "Version:        "+strings.TrimPrefix(crioVersion, "v")+"\n") ||
			commit == nil || !strings.HasSuffix(commit[1], crioReportedCommit(version)) {
			t.Errorf("crio version:\n%s\nwant version %s, GitCommit ending %s", got, crioVersion, crioReportedCommit(version))
		}
	})
	t.Run("containerd config dump", func(t *testing.T) {
		checkConfigDump(t, filepath.Join(bin, "containerd"),
			readFile(t, filepath.Join(local, "share/nrinet/containerd-config.toml")),
			readFile(t, filepath.Join(local, "share/nrinet/nrinet-network-mode.toml")))
	})
	t.Run("crio config", func(t *testing.T) {
		checkCrioConfig(t, filepath.Join(bin, "crio"), readFile(t, filepath.Join(local, "share/nrinet/nrinet-network-mode.conf")))
	})
	t.Run("shipped files", func(t *testing.T) {
		// With the default paths, make install ships contrib's files as
		// they are.
		for name, src := range map[string]string{
			"lib/systemd/system/nrinetd.service":    "contrib/nrinetd.service",
			"lib/systemd/system/containerd.service": "contrib/containerd.service",
			"lib/systemd/system/crio.service":       "contrib/crio.service",
			"share/nrinet/nrinetd.toml":             "contrib/nrinetd.toml",
			"share/nrinet/10-podnet.conf":           "contrib/10-podnet.conf",
			"share/nrinet/containerd-config.toml":   "contrib/containerd-config.toml",
			"share/nrinet/nrinet-network-mode.toml": "contrib/nrinet-network-mode.toml",
			"share/nrinet/nrinet-network-mode.conf": "contrib/nrinet-network-mode.conf",
			"share/doc/nrinet/LICENSE":              "LICENSE",
		} {
			got, err1 := os.ReadFile(filepath.Join(local, name))
			want, err2 := os.ReadFile(filepath.Join(repoRoot(t), src))
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s (%v, %v)", name, src, err1, err2)
			}
		}
		notice, err := os.ReadFile(filepath.Join(local, "share/doc/containerd-nrinet/NOTICE"))
		if err != nil || !bytes.Contains(notice, []byte("Docker")) {
			t.Errorf("containerd's NOTICE: %q, %v", notice, err)
		}
		crioLicense, err := os.ReadFile(filepath.Join(local, "share/doc/cri-o-nrinet/LICENSE"))
		if err != nil || !bytes.Contains(crioLicense, []byte("Apache License")) {
			t.Errorf("CRI-O's LICENSE: %.80q, %v", crioLicense, err)
		}
	})
	t.Run("dpkg", func(t *testing.T) {
		checkDpkgInstall(t, dir, version, runtime.GOARCH)
	})
}

// readFile reads a file, failing the test if it cannot.
func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReleaseInstallPaths runs make install, install-containerd and
// install-crio with other paths than the release's (PREFIX=/usr,
// SYSCONFDIR=/srv/etc) and INSTALL_CONFIG=1 into a DESTDIR, and checks
// where the files go and that the units, config.toml and the drop-ins name
// those paths; that a second install keeps an edited config.toml; and that
// make uninstall, uninstall-containerd and uninstall-crio leave only it.
// It builds nrinet's commands again (cached: a link each) and reuses make
// release's containerd and CRI-O, for the release's version.
func TestReleaseInstallPaths(t *testing.T) {
	dir := releaseDir(t)
	version, _ := releaseVersion(t, dir)
	destdir := t.TempDir()
	vars := []string{
		"DESTDIR=" + destdir, "VERSION=" + version, "PREFIX=/usr", "SYSCONFDIR=/srv/etc",
		"GOARCH=" + runtime.GOARCH, "INSTALL_CONFIG=1",
	}
	runMake := func(targets ...string) string {
		t.Helper()
		cmd := exec.Command("make", append(append([]string{"--no-print-directory", "-C", repoRoot(t)}, targets...), vars...)...)
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GOARCH", "PREFIX", "BINDIR", "DATADIR", "DOCDIR", "SYSTEMDUNITDIR"}, name) {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(targets, " "), err, out)
		}
		return string(out)
	}
	list := func() []string {
		var files []string
		filepath.WalkDir(destdir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(destdir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		return files
	}

	runMake("install", "install-containerd", "install-crio")
	want := []string{
		"srv/etc/containerd/conf.d/nrinet-network-mode.toml",
		"srv/etc/containerd/config.toml",
		"srv/etc/crio/crio.conf.d/nrinet-network-mode.conf",
		"usr/bin/containerd",
		"usr/bin/containerd-shim-runc-v2",
		"usr/bin/crio",
		"usr/bin/ctr",
		"usr/bin/nri-cni",
		"usr/bin/nri-podnet",
		"usr/bin/nrinetd",
		"usr/bin/pinns",
		"usr/lib/systemd/system/containerd.service",
		"usr/lib/systemd/system/crio.service",
		"usr/lib/systemd/system/nrinetd.service",
		"usr/share/doc/containerd-nrinet/LICENSE",
		"usr/share/doc/containerd-nrinet/NOTICE",
		"usr/share/doc/cri-o-nrinet/LICENSE",
		"usr/share/doc/nrinet/LICENSE",
		"usr/share/nrinet/10-podnet.conf",
		"usr/share/nrinet/containerd-config.toml",
		"usr/share/nrinet/nrinet-network-mode.conf",
		"usr/share/nrinet/nrinet-network-mode.toml",
		"usr/share/nrinet/nrinetd.toml",
	}
	if got := list(); !slices.Equal(got, want) {
		t.Errorf("installed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(destdir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nrinetd := checkUnit(t, "nrinetd.service", read("usr/lib/systemd/system/nrinetd.service"), "/usr/bin", "nrinetd")
	if got := nrinetd.one(t, "Service", "ExecStart"); got != "/usr/bin/nrinetd -config /srv/etc/nrinetd/config.toml" {
		t.Errorf("nrinetd.service: ExecStart=%s", got)
	}
	containerd := checkUnit(t, "containerd.service", read("usr/lib/systemd/system/containerd.service"), "/usr/bin", "containerd")
	if got := containerd.one(t, "Service", "ExecStart"); got != "/usr/bin/containerd --config /srv/etc/containerd/config.toml" {
		t.Errorf("containerd.service: ExecStart=%s", got)
	}
	if got := containerd.one(t, "Service", "Environment"); !strings.HasPrefix(got, "PATH=/usr/bin:") {
		t.Errorf("containerd.service: Environment=%s, want PATH=/usr/bin first", got)
	}
	crio := checkUnit(t, "crio.service", read("usr/lib/systemd/system/crio.service"), "/usr/bin", "crio")
	if got := crio.one(t, "Service", "ExecStart"); !strings.HasPrefix(got, "/usr/bin/crio --config-dir /srv/etc/crio/crio.conf.d $CRIO_CONFIG_OPTIONS ") {
		t.Errorf("crio.service: ExecStart=%s", got)
	}
	if got := unitPath(t, crio); !strings.HasPrefix(got, "/usr/bin:") {
		t.Errorf("crio.service: PATH=%s, want /usr/bin first", got)
	}
	for _, f := range []struct{ installed, shipped string }{
		{"srv/etc/containerd/conf.d/nrinet-network-mode.toml", "usr/share/nrinet/nrinet-network-mode.toml"},
		{"srv/etc/crio/crio.conf.d/nrinet-network-mode.conf", "usr/share/nrinet/nrinet-network-mode.conf"},
	} {
		if !bytes.Equal(read(f.installed), read(f.shipped)) {
			t.Errorf("%s is not the shipped %s", f.installed, f.shipped)
		}
	}
	c := parseContainerdConfig(t, read("srv/etc/containerd/config.toml"))
	if !slices.Equal(c.Imports, []string{"/srv/etc/containerd/conf.d/*.toml"}) {
		t.Errorf("config.toml imports %q, want /srv/etc/containerd/conf.d/*.toml", c.Imports)
	}
	if !bytes.Equal(read("srv/etc/containerd/config.toml"), read("usr/share/nrinet/containerd-config.toml")) {
		t.Error("config.toml is not the shipped example")
	}

	// An operator's config.toml stays.
	mine := []byte("version = 3\n# mine\n")
	if err := os.WriteFile(filepath.Join(destdir, "srv/etc/containerd/config.toml"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := runMake("install-containerd"); !strings.Contains(out, "kept "+destdir+"/srv/etc/containerd/config.toml") {
		t.Errorf("make install-containerd over a config.toml said:\n%s", out)
	}
	if got := read("srv/etc/containerd/config.toml"); !bytes.Equal(got, mine) {
		t.Errorf("a second make install-containerd changed config.toml to:\n%s", got)
	}

	runMake("uninstall", "uninstall-containerd", "uninstall-crio")
	if got := list(); !slices.Equal(got, []string{"srv/etc/containerd/config.toml"}) {
		t.Errorf("after make uninstall uninstall-containerd uninstall-crio:\n%s\nwant only srv/etc/containerd/config.toml", strings.Join(got, "\n"))
	}
}
