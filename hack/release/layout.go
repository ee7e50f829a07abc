package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// containerdVersion is the containerd release that containerd on nrinet
// is built from (hack/containerd.sh's default; its patch series is for it).
const containerdVersion = "v2.4.2"

// A tarball kind: what one make target installs, packed.
type kind struct {
	name   string // "nrinet" or "containerd"
	target string // the make target that stages it
	files  []layoutFile
}

// layoutFile is one file a tarball must hold.
type layoutFile struct {
	name string // relative to /, slash-separated
	mode int64
	elf  bool // a binary for the tarball's architecture, static
}

// kinds are the tarballs of each architecture, and exactly what each holds:
// make install's and make install-containerd's files with the default
// paths (PREFIX=/usr/local, SYSCONFDIR=/etc), but config.toml.
var kinds = []kind{
	{name: "nrinet", target: "install", files: []layoutFile{
		{name: "usr/local/bin/nri-cni", mode: 0o755, elf: true},
		{name: "usr/local/bin/nri-podnet", mode: 0o755, elf: true},
		{name: "usr/local/bin/nrinetd", mode: 0o755, elf: true},
		{name: "usr/local/lib/systemd/system/nrinetd.service", mode: 0o644},
		{name: "usr/local/share/doc/nrinet/LICENSE", mode: 0o644},
		{name: "usr/local/share/nrinet/10-podnet.conf", mode: 0o644},
		{name: "usr/local/share/nrinet/nrinetd.toml", mode: 0o644},
	}},
	{name: "containerd", target: "install-containerd", files: []layoutFile{
		{name: "etc/containerd/conf.d/nrinet-network-mode.toml", mode: 0o644},
		{name: "usr/local/bin/containerd", mode: 0o755, elf: true},
		{name: "usr/local/bin/containerd-shim-runc-v2", mode: 0o755, elf: true},
		{name: "usr/local/bin/ctr", mode: 0o755, elf: true},
		{name: "usr/local/lib/systemd/system/containerd.service", mode: 0o644},
		{name: "usr/local/share/doc/containerd-nrinet/LICENSE", mode: 0o644},
		{name: "usr/local/share/doc/containerd-nrinet/NOTICE", mode: 0o644},
		{name: "usr/local/share/nrinet/containerd-config.toml", mode: 0o644},
	}},
}

// tarballName is the file name of kind's tarball for version and goarch.
func tarballName(k kind, version, goarch string) string {
	v := strings.TrimPrefix(version, "v")
	switch k.name {
	case "nrinet":
		return "nrinet-" + v + "-linux-" + goarch + ".tar.gz"
	case "containerd":
		return "containerd-" + strings.TrimPrefix(containerdVersion, "v") + "-nrinet." + v + "-linux-" + goarch + ".tar.gz"
	}
	panic("unknown kind " + k.name)
}

// containerdReportedVersion is the version containerd on nrinet reports
// (containerd --version, the CRI's runtime version, NRI's runtime version).
func containerdReportedVersion(version string) string {
	return containerdVersion + "+nrinet." + strings.TrimPrefix(version, "v")
}

// artifacts lists the tarballs of a release, in name order.
func artifacts(version string, arches []string) []string {
	var names []string
	for _, arch := range arches {
		for _, k := range kinds {
			names = append(names, tarballName(k, version, arch))
		}
	}
	slices.Sort(names)
	return names
}

// checkTarball checks that the file tarball holds exactly k's files and
// nothing else: regular files only, in name order, with clean relative
// names, owned by root, all with one modification time, each with its
// mode; every binary a static ELF executable for goarch, every other file
// non-empty text.
func checkTarball(tarball string, k kind, goarch string) error {
	entries, err := readTarball(tarball)
	if err != nil {
		return err
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{filepath.Base(tarball)}, args...)...))
	}
	want := map[string]layoutFile{}
	for _, f := range k.files {
		want[f.name] = f
	}
	seen := map[string]bool{}
	for i, e := range entries {
		h := e.hdr
		name := h.Name
		if i > 0 && entries[i-1].hdr.Name >= name {
			fail("%s after %s: entries not in name order, or repeated", name, entries[i-1].hdr.Name)
		}
		if path.Clean(name) != name || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			fail("%q: not a clean relative name", name)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" {
			fail("%s: owned by %d:%d (%s:%s), want 0:0 (root:root)", name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(entries[0].hdr.ModTime) {
			fail("%s: dated %s, %s %s", name, h.ModTime.UTC(), entries[0].hdr.Name, entries[0].hdr.ModTime.UTC())
		}
		if h.Typeflag != tar.TypeReg {
			fail("%s: type %q, want a regular file (no directories, links or devices)", name, h.Typeflag)
			continue
		}
		seen[name] = true
		f, ok := want[name]
		if !ok {
			fail("%s: not part of the layout", name)
			continue
		}
		if h.Mode != f.mode {
			fail("%s: mode %#o, want %#o", name, h.Mode, f.mode)
		}
		switch {
		case f.elf:
			if err := checkStaticELF(e.data, goarch); err != nil {
				fail("%s: %v", name, err)
			}
		case len(e.data) == 0:
			fail("%s: empty", name)
		case bytes.IndexByte(e.data, 0) >= 0:
			fail("%s: not text", name)
		}
	}
	for _, f := range k.files {
		if !seen[f.name] {
			fail("%s is missing", f.name)
		}
	}
	return errors.Join(errs...)
}

// verifyRelease checks a release directory: it holds the tarballs of
// version for arches, their .sha256sum files and SHA256SUMS, and nothing
// else; the checksums match; every tarball passes checkTarball.
func verifyRelease(dir, version string, arches []string) error {
	names := artifacts(version, arches)
	expected := []string{sumsFile}
	for _, n := range names {
		expected = append(expected, n, n+sumSuffix)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	var have []string
	for _, de := range des {
		have = append(have, de.Name())
		if !slices.Contains(expected, de.Name()) {
			errs = append(errs, fmt.Errorf("%s: unexpected file %s", dir, de.Name()))
		}
	}
	for _, n := range expected {
		if !slices.Contains(have, n) {
			errs = append(errs, fmt.Errorf("%s: %s is missing", dir, n))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := verifyChecksums(dir, names); err != nil {
		errs = append(errs, err)
	}
	for _, arch := range arches {
		for _, k := range kinds {
			if err := checkTarball(filepath.Join(dir, tarballName(k, version, arch)), k, arch); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
