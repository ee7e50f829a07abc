package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A pkg is a package as read back: its metadata, and its regular files
// as tarball entries, named relative to / without a leading ./ or /, in
// name order. Directories are kept apart, by name.
type pkg struct {
	name, version, release, arch, license string
	depends                               []string
	files                                 []entry
	dirs                                  []string
}

// readPackage reads a package of format.
func readPackage(file, format string) (*pkg, error) {
	switch format {
	case "deb":
		return readDeb(file)
	case "rpm":
		return readRPM(file)
	}
	return nil, fmt.Errorf("unknown package format %q", format)
}

// debArch and rpmArch are the architectures' names in the two formats.
var (
	debArch = map[string]string{"amd64": "amd64", "arm64": "arm64"}
	rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
)

// checkPackage checks p's package in format for version and goarch: its
// name, version, architecture and dependencies (and for RPM its license)
// are the release's, and it holds exactly the tarball's files (entries,
// read from it) under prefix, with the same modes, owners, times and
// content; the only directories it has are those files' parents.
func checkPackage(file, format string, p product, version, goarch string, entries []entry) error {
	got, err := readPackage(file, format)
	if err != nil {
		return err
	}
	what := filepath.Base(file)
	found := findings{what: what}
	fail := found.add
	arch := map[string]map[string]string{"deb": debArch, "rpm": rpmArch}[format][goarch]
	if got.name != p.pkg.name || got.version != packageVersion(version) || got.release != packageRelease || got.arch != arch {
		fail("package %s %s-%s %s, want %s %s-%s %s", got.name, got.version, got.release, got.arch,
			p.pkg.name, packageVersion(version), packageRelease, arch)
	}
	if format == "rpm" && got.license != license {
		fail("license %q, want %s", got.license, license)
	}
	var deps []string
	for _, d := range got.depends {
		if !strings.HasPrefix(d, "rpmlib(") && !strings.HasPrefix(d, "/bin/sh") { // rpm's own
			deps = append(deps, d)
		}
	}
	if want := p.pkg.depends[format]; !slices.Equal(deps, want) {
		fail("depends on %q, want %q", deps, want)
	}
	// The package's files, named as the tarball's: relative to prefix.
	rel := strings.TrimPrefix(prefix, "/") + "/"
	var fs []entry
	for _, e := range got.files {
		name, ok := strings.CutPrefix(e.hdr.Name, rel)
		if !ok {
			fail("/%s is not under %s", e.hdr.Name, prefix)
			continue
		}
		h := *e.hdr
		h.Name = name
		fs = append(fs, entry{hdr: &h, data: e.data})
	}
	var mtime time.Time
	if len(entries) > 0 {
		mtime = entries[0].hdr.ModTime
	}
	if err := checkEntries(what, fs, p, goarch, mtime); err != nil {
		found.errs = append(found.errs, err)
	}
	same := len(fs) == len(entries)
	for i := 0; same && i < len(fs); i++ {
		same = fs[i].hdr.Name == entries[i].hdr.Name && bytes.Equal(fs[i].data, entries[i].data)
	}
	if !same {
		fail("its files differ from the tarball's:\n%s", diffEntries(fs, entries))
	}
	parents := map[string]bool{}
	for _, e := range got.files {
		for d := path.Dir(e.hdr.Name); d != "."; d = path.Dir(d) {
			parents[d] = true
		}
	}
	for _, d := range got.dirs {
		if !parents[d] {
			fail("directory /%s holds none of its files", d)
		}
	}
	return found.err()
}

// diffEntries says which names and contents of a and b differ (the SHA-256
// of each), one line per name.
func diffEntries(a, b []entry) string {
	sums := func(es []entry) map[string]string {
		m := map[string]string{}
		for _, e := range es {
			s := sha256.Sum256(e.data)
			m[e.hdr.Name] = hex.EncodeToString(s[:8])
		}
		return m
	}
	sa, sb := sums(a), sums(b)
	var names []string
	for n := range sa {
		names = append(names, n)
	}
	for n := range sb {
		if _, ok := sa[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out strings.Builder
	for _, n := range names {
		if sa[n] != sb[n] {
			fmt.Fprintf(&out, "  %s: package %s, tarball %s\n", n, cmp.Or(sa[n], "none"), cmp.Or(sb[n], "none"))
		}
	}
	return out.String()
}
