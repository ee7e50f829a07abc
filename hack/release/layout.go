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
	"time"

	"github.com/nrinet/nrinet/internal/pins"
)

// prefix is where a release's files go on a node: the tarballs unpack
// under it (tar -C /usr/local -xzf), and the packages install there.
const prefix = "/usr/local"

// The runtime releases that containerd and CRI-O on nrinet are built from
// (internal/pins, as hack/containerd.sh and hack/crio.sh build them; their
// patch series are for them).
var (
	containerdVersion = pins.Containerd
	crioVersion       = pins.CRIO
)

// A product is what one make target installs, shipped for each
// architecture as a tarball, its SBOM, a .deb and an .rpm.
type product struct {
	name   string // "nrinet", "containerd" or "crio"
	target string // the make target that stages it
	pkg    packageMeta
	files  []layoutFile // exactly what it holds, in name order
}

// layoutFile is one file a product holds.
type layoutFile struct {
	name string // relative to prefix, slash-separated
	mode int64
	elf  bool // a binary for the product's architecture, static
	// cSource is the package URL of the source of a binary that is a C
	// program, not Go, and so has no Go build info to describe it.
	cSource string
}

// products are the products of each architecture, and exactly what each
// holds: make install's, make install-containerd's and make
// install-crio's files with the default paths (PREFIX=/usr/local) and
// INSTALL_CONFIG=0, i.e. nothing under /etc. The drop-ins that turn the
// runtimes' network mode nri on are examples under share/nrinet, copied
// to /etc by the operator (docs/install.md says why).
var products = []product{
	{name: "nrinet", target: "install", pkg: nrinetPackage, files: []layoutFile{
		{name: "bin/nri-cni", mode: 0o755, elf: true},
		{name: "bin/nri-podnet", mode: 0o755, elf: true},
		{name: "bin/nrinetd", mode: 0o755, elf: true},
		{name: "lib/systemd/system/nrinetd.service", mode: 0o644},
		{name: "share/doc/nrinet/LICENSE", mode: 0o644},
		{name: "share/nrinet/10-podnet.conf", mode: 0o644},
		{name: "share/nrinet/nrinetd.toml", mode: 0o644},
	}},
	{name: "containerd", target: "install-containerd", pkg: containerdPackage, files: []layoutFile{
		{name: "bin/containerd", mode: 0o755, elf: true},
		{name: "bin/containerd-shim-runc-v2", mode: 0o755, elf: true},
		{name: "bin/ctr", mode: 0o755, elf: true},
		{name: "lib/systemd/system/containerd.service", mode: 0o644},
		{name: "share/doc/containerd-nrinet/LICENSE", mode: 0o644},
		{name: "share/doc/containerd-nrinet/NOTICE", mode: 0o644},
		{name: "share/nrinet/containerd-config.toml", mode: 0o644},
		{name: "share/nrinet/nrinet-network-mode.toml", mode: 0o644},
	}},
	{name: "crio", target: "install-crio", pkg: crioPackage, files: []layoutFile{
		{name: "bin/crio", mode: 0o755, elf: true},
		{name: "bin/pinns", mode: 0o755, elf: true, cSource: "pkg:github/cri-o/cri-o@" + crioVersion + "#pinns"},
		{name: "lib/systemd/system/crio.service", mode: 0o644},
		{name: "share/doc/cri-o-nrinet/LICENSE", mode: 0o644},
		{name: "share/nrinet/nrinet-network-mode.conf", mode: 0o644},
	}},
}

// productNamed returns the product called name.
func productNamed(name string) product {
	i := slices.IndexFunc(products, func(p product) bool { return p.name == name })
	if i < 0 {
		panic("unknown product " + name)
	}
	return products[i]
}

// baseName is the name of p's artifacts for version and goarch, without
// the suffix: the tarball is <base>.tar.gz, its SBOM <base>.cdx.json.
func baseName(p product, version, goarch string) string {
	v := strings.TrimPrefix(version, "v")
	switch p.name {
	case "nrinet":
		return "nrinet-" + v + "-linux-" + goarch
	case "containerd":
		return "containerd-" + strings.TrimPrefix(containerdVersion, "v") + "-nrinet." + v + "-linux-" + goarch
	case "crio":
		return "cri-o-" + strings.TrimPrefix(crioVersion, "v") + "-nrinet." + v + "-linux-" + goarch
	}
	panic("unknown product " + p.name)
}

// tarballName is the file name of p's tarball for version and goarch.
func tarballName(p product, version, goarch string) string {
	return baseName(p, version, goarch) + ".tar.gz"
}

// sbomName is the file name of the SBOM of p's tarball.
func sbomName(p product, version, goarch string) string {
	return baseName(p, version, goarch) + sbomSuffix
}

// containerdReportedVersion is the version containerd on nrinet reports
// (containerd --version, the CRI's runtime version, NRI's runtime version).
func containerdReportedVersion(version string) string {
	return containerdVersion + "+nrinet." + strings.TrimPrefix(version, "v")
}

// crioReportedCommit is the end of the git commit CRI-O on nrinet reports
// (crio version: GitCommit nri-<key>+nrinet.<v>); CRI-O's version itself is
// a constant of its source. A -dirty version loses its suffix there, which
// CRI-O reports as GitTreeState dirty.
func crioReportedCommit(version string) string {
	return "+nrinet." + strings.TrimSuffix(strings.TrimPrefix(version, "v"), "-dirty")
}

// artifacts lists a release's files but the checksum files, in name
// order: for each architecture and product its tarball, SBOM, .deb and
// .rpm.
func artifacts(version string, arches []string) []string {
	var names []string
	for _, arch := range arches {
		for _, p := range products {
			names = append(names, tarballName(p, version, arch), sbomName(p, version, arch),
				packageFileName(p, version, arch, "deb"), packageFileName(p, version, arch, "rpm"))
		}
	}
	slices.Sort(names)
	return names
}

// tarballs lists a release's tarballs, in name order.
func tarballs(version string, arches []string) []string {
	var names []string
	for _, arch := range arches {
		for _, p := range products {
			names = append(names, tarballName(p, version, arch))
		}
	}
	slices.Sort(names)
	return names
}

// checkEntries checks that entries (a tarball's, or a package's files
// with prefix taken off) are exactly p's files and nothing else: regular
// files only, in name order, with clean relative names, owned by root, all
// dated mtime (or, when mtime is zero, all alike), each with its mode;
// every binary a static ELF executable for goarch, every other file
// non-empty text. what names the archive in the errors.
func checkEntries(what string, entries []entry, p product, goarch string, mtime time.Time) error {
	found := findings{what: what}
	fail := found.add
	want := map[string]layoutFile{}
	for _, f := range p.files {
		want[f.name] = f
	}
	if mtime.IsZero() && len(entries) > 0 {
		mtime = entries[0].hdr.ModTime
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
		if !h.ModTime.Equal(mtime) {
			fail("%s: dated %s, want %s", name, h.ModTime.UTC(), mtime.UTC())
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
	for _, f := range p.files {
		if !seen[f.name] {
			fail("%s is missing", f.name)
		}
	}
	return found.err()
}

// checkTarball checks p's tarball for goarch with checkEntries.
func checkTarball(tarball string, p product, goarch string, mtime time.Time) ([]entry, error) {
	entries, err := readTarball(tarball)
	if err != nil {
		return nil, err
	}
	return entries, checkEntries(filepath.Base(tarball), entries, p, goarch, mtime)
}

// verifyRelease checks a release directory: it holds the artifacts of
// version for arches, the tarballs' .sha256sum files and SHA256SUMS, and
// nothing else; the checksums match; every tarball passes checkTarball
// (dated mtime; zero: any one time), its SBOM lists what its binaries are
// built from (checkSBOM), and its .deb and .rpm hold the same files with
// the package's metadata (checkPackage).
func verifyRelease(dir, version string, arches []string, mtime time.Time) error {
	names := artifacts(version, arches)
	tars := tarballs(version, arches)
	expected := append([]string{sumsFile}, names...)
	for _, n := range tars {
		expected = append(expected, n+sumSuffix)
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
	if err := verifyChecksums(dir, names, tars); err != nil {
		errs = append(errs, err)
	}
	for _, arch := range arches {
		for _, p := range products {
			entries, err := checkTarball(filepath.Join(dir, tarballName(p, version, arch)), p, arch, mtime)
			if err != nil {
				errs = append(errs, err)
			}
			if entries == nil {
				continue
			}
			sum, err := fileSHA256(filepath.Join(dir, tarballName(p, version, arch)))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := checkSBOMFile(filepath.Join(dir, sbomName(p, version, arch)), p, version, arch, entries, sum); err != nil {
				errs = append(errs, err)
			}
			for _, format := range packageFormats {
				if err := checkPackage(filepath.Join(dir, packageFileName(p, version, arch, format)), format, p, version, arch, entries); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
