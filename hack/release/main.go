package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	version, out, makeCmd, cache string
	arches                       []string
}

// defaultArches are the architectures a release is built for.
var defaultArches = []string{"amd64", "arm64"}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var arches string
	fs.StringVar(&o.version, "version", "", "the version stamped into the binaries and named in the artifacts (default: hack/version.sh)")
	fs.StringVar(&o.out, "out", filepath.Join("_output", "release"), "directory the artifacts are written to")
	fs.StringVar(&arches, "arch", strings.Join(defaultArches, ","), "GOARCHes to build for, comma-separated")
	fs.StringVar(&o.makeCmd, "make", "make", "the make command")
	fs.StringVar(&o.cache, "cache", "", "RELEASE_CACHE for make install-containerd and install-crio (default: the Makefile's)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: release [-version V] [-out DIR] [-arch amd64,arm64] [-make make] [-cache DIR]\n\nWrites nrinet's release: tarballs, SBOMs, .deb and .rpm packages, checksums (make release).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for a := range strings.SplitSeq(arches, ",") {
		if _, ok := machines[a]; !ok {
			return o, fmt.Errorf("-arch: %q is not one of %s", a, strings.Join(defaultArches, ", "))
		}
		if slices.Contains(o.arches, a) {
			return o, fmt.Errorf("-arch: %s twice", a)
		}
		o.arches = append(o.arches, a)
	}
	return o, nil
}

// run stages, packs, sums and checks the release the arguments describe,
// and prints one line per artifact: size, SHA-256, path.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	described := ""
	if out, err := exec.CommandContext(ctx, "hack/version.sh").Output(); err == nil {
		described = strings.TrimSpace(string(out))
	} else if o.version == "" {
		return fmt.Errorf("hack/version.sh: %w", err)
	}
	if o.version == "" {
		o.version = described
	}
	if err := checkVersion(o.version); err != nil {
		return err
	}
	switch {
	case strings.HasSuffix(o.version, "-dirty"):
		fmt.Fprintf(stderr, "release: warning: version %s: the work tree has changes that no commit holds\n", o.version)
	case described != "" && o.version != described:
		// make release VERSION=v0.1.0 before the tag: the release to be,
		// built and checked from this commit.
		fmt.Fprintf(stderr, "release: note: version %s is given, this checkout is %s: %s does not name it (yet)\n",
			o.version, described, o.version)
	}
	mtime, err := sourceDate(ctx)
	if err != nil {
		return err
	}
	stage := func(ctx context.Context, p product, arch, dir string) error {
		return stageInstall(ctx, o, p, arch, dir, stderr)
	}
	sums, err := buildRelease(ctx, o, mtime, stage, stderr)
	if err != nil {
		return err
	}
	for _, n := range artifacts(o.version, o.arches) {
		info, err := os.Stat(filepath.Join(o.out, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%10d %s %s\n", info.Size(), sums[n], filepath.Join(o.out, n))
	}
	return nil
}

// stageFunc installs product p for arch into the staging directory dir
// (a DESTDIR: the files go to dir/usr/local/...).
type stageFunc func(ctx context.Context, p product, arch, dir string) error

// buildRelease writes the release o describes into o.out, every file
// dated mtime: for each architecture and product, what stage installs,
// packed as a tarball, described in an SBOM, and packaged as a .deb and an
// .rpm; then the checksums, and it checks them all (verifyRelease). It
// returns the artifacts' SHA-256 by name.
func buildRelease(ctx context.Context, o options, mtime time.Time, stage stageFunc, log io.Writer) (map[string]string, error) {
	if err := clean(o.out); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "nrinet-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	for _, arch := range o.arches {
		for _, p := range products {
			dir := filepath.Join(work, p.name+"-"+arch)
			start := time.Now()
			if err := stage(ctx, p, arch, dir); err != nil {
				return nil, err
			}
			files, err := stagedFiles(dir)
			if err != nil {
				return nil, err
			}
			if err := writeProduct(o.out, p, o.version, arch, files, mtime); err != nil {
				return nil, err
			}
			fmt.Fprintf(log, "release: %s for linux/%s (%s)\n", p.pkg.name, arch, time.Since(start).Round(time.Second))
		}
	}
	sums, err := writeChecksums(o.out, artifacts(o.version, o.arches), tarballs(o.version, o.arches))
	if err != nil {
		return nil, err
	}
	if err := verifyRelease(o.out, o.version, o.arches, mtime); err != nil {
		return nil, fmt.Errorf("the artifacts fail their checks:\n%w", err)
	}
	return sums, nil
}

// writeProduct writes p's artifacts for version and arch into out, from
// its staged files: the tarball, then, from the tarball as read back,
// its SBOM, and the .deb and the .rpm of the same files.
func writeProduct(out string, p product, version, arch string, files []file, mtime time.Time) error {
	tarball := filepath.Join(out, tarballName(p, version, arch))
	if err := writeTarball(tarball, files, mtime); err != nil {
		return err
	}
	entries, err := readTarball(tarball)
	if err != nil {
		return err
	}
	sum, err := fileSHA256(tarball)
	if err != nil {
		return err
	}
	in := sbomInput{p: p, version: version, goarch: arch, mtime: mtime, tarball: filepath.Base(tarball), sum: sum, entries: entries}
	if err := writeSBOM(filepath.Join(out, sbomName(p, version, arch)), in); err != nil {
		return err
	}
	for _, format := range packageFormats {
		if _, err := writePackage(out, p, version, arch, format, files, mtime); err != nil {
			return err
		}
	}
	return nil
}

// checkVersion refuses a version that cannot name a file or go into
// containerd's version as build metadata ([0-9A-Za-z-] and dots).
func checkVersion(v string) error {
	if !strings.HasPrefix(v, "v") || len(v) < 2 {
		return fmt.Errorf("version %q: want v<semver>, e.g. v0.1.0 (hack/version.sh)", v)
	}
	for _, r := range v[1:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-') {
			return fmt.Errorf("version %q: %q is not allowed (only [0-9A-Za-z.-])", v, r)
		}
	}
	return nil
}

// sourceDate is the time every tarball entry gets: SOURCE_DATE_EPOCH when
// set (reproducible-builds.org's convention), else the commit time of
// HEAD, else the Unix epoch outside a git checkout.
func sourceDate(ctx context.Context) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	out, err := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct", "HEAD").Output()
	if err != nil {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log -1 --format=%%ct: %q: %w", out, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// clean makes out an empty place for a release: it creates it, and removes
// what an earlier release left there (tarballs, SBOMs, packages, checksum
// files, and their temporary files); anything else stays, and fails the
// check at the end.
func clean(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	des, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	for _, de := range des {
		n := strings.TrimSuffix(de.Name(), ".tmp")
		if n == sumsFile || strings.HasSuffix(n, sumSuffix) || strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, sbomSuffix) ||
			strings.HasSuffix(n, ".deb") || strings.HasSuffix(n, ".rpm") {
			if err := os.Remove(filepath.Join(out, de.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// stageInstall runs p's make target for arch into stage (DESTDIR), with
// every path variable at its default whatever the environment says, and
// nothing under SYSCONFDIR (INSTALL_CONFIG=0). The make that runs `make
// release` passes nothing down: MAKEFLAGS is dropped.
func stageInstall(ctx context.Context, o options, p product, arch, stage string, stderr io.Writer) error {
	args := []string{
		"--no-print-directory", p.target,
		"DESTDIR=" + stage,
		"GOARCH=" + arch,
		"VERSION=" + o.version,
		"PREFIX=/usr/local",
		"BINDIR=/usr/local/bin",
		"DATADIR=/usr/local/share",
		"DOCDIR=/usr/local/share/doc",
		"SYSCONFDIR=/etc",
		"SYSTEMDUNITDIR=/usr/local/lib/systemd/system",
		"INSTALL_CONFIG=0",
	}
	if o.cache != "" {
		args = append(args, "RELEASE_CACHE="+o.cache)
	}
	cmd := exec.CommandContext(ctx, o.makeCmd, args...)
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GOOS", "GOARCH", "CC",
			"NRINET_CONTAINERD_VERSION", "NRINET_CONTAINERD_NRI_DIR", "NRINET_CRIO_VERSION", "NRINET_CRIO_CACHE":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stderr, stderr
	fmt.Fprintf(stderr, "release: make %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s for linux/%s: %w", p.target, arch, err)
	}
	return nil
}
