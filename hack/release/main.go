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
	fs.StringVar(&o.cache, "cache", "", "RELEASE_CACHE for make install-containerd (default: the Makefile's)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: release [-version V] [-out DIR] [-arch amd64,arm64] [-make make] [-cache DIR]\n\nWrites nrinet's release tarballs and their checksums (make release).\n\n")
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
	if o.version == "" {
		out, err := exec.CommandContext(ctx, "hack/version.sh").Output()
		if err != nil {
			return fmt.Errorf("hack/version.sh: %w", err)
		}
		o.version = strings.TrimSpace(string(out))
	}
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if strings.HasSuffix(o.version, "-dirty") {
		fmt.Fprintf(stderr, "release: warning: version %s: the work tree has changes that no commit holds\n", o.version)
	}
	mtime, err := sourceDate(ctx)
	if err != nil {
		return err
	}
	if err := clean(o.out); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "nrinet-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	for _, arch := range o.arches {
		for _, k := range kinds {
			stage := filepath.Join(work, k.name+"-"+arch)
			start := time.Now()
			if err := stageInstall(ctx, o, k, arch, stage, stderr); err != nil {
				return err
			}
			files, err := stagedFiles(stage)
			if err != nil {
				return err
			}
			name := tarballName(k, o.version, arch)
			if err := writeTarball(filepath.Join(o.out, name), files, mtime); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "release: %s (%s)\n", name, time.Since(start).Round(time.Second))
		}
	}
	names := artifacts(o.version, o.arches)
	sums, err := writeChecksums(o.out, names)
	if err != nil {
		return err
	}
	if err := verifyRelease(o.out, o.version, o.arches); err != nil {
		return fmt.Errorf("the artifacts fail their checks:\n%w", err)
	}
	for _, n := range names {
		info, err := os.Stat(filepath.Join(o.out, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%10d %s %s\n", info.Size(), sums[n], filepath.Join(o.out, n))
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
// what an earlier release left there (tarballs, their checksum files,
// SHA256SUMS); anything else stays, and fails the check at the end.
func clean(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	des, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	for _, de := range des {
		n := de.Name()
		if n == sumsFile || strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".tar.gz.tmp") || strings.HasSuffix(n, sumSuffix) {
			if err := os.Remove(filepath.Join(out, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// stageInstall runs k's make target for arch into stage (DESTDIR), with
// every path variable at its default whatever the environment says, and
// no configuration file of the operator's (INSTALL_CONFIG=0). The make
// that runs `make release` passes nothing down: MAKEFLAGS is dropped.
func stageInstall(ctx context.Context, o options, k kind, arch, stage string, stderr io.Writer) error {
	args := []string{
		"--no-print-directory", k.target,
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
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GOOS", "GOARCH", "NRINET_CONTAINERD_VERSION", "NRINET_CONTAINERD_NRI_DIR":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stderr, stderr
	fmt.Fprintf(stderr, "release: make %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s for linux/%s: %w", k.target, arch, err)
	}
	return nil
}
