package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/blakesmith/ar"
)

// readDeb reads a .deb: an ar archive of debian-binary ("2.0"),
// control.tar.gz (its control file) and data.tar.gz (the files).
func readDeb(file string) (*pkg, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := ar.NewReader(bufio.NewReader(f))
	p := &pkg{}
	var members []string
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		members = append(members, name)
		body, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		switch name {
		case "debian-binary":
			if string(body) != "2.0\n" {
				return nil, fmt.Errorf("%s: debian-binary is %q, want 2.0", file, body)
			}
		case "control.tar.gz":
			entries, err := readTarGz(body)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, name, err)
			}
			i := slices.IndexFunc(entries, func(e entry) bool { return path.Clean(e.hdr.Name) == "control" })
			if i < 0 {
				return nil, fmt.Errorf("%s: %s has no control file", file, name)
			}
			fields := parseControl(entries[i].data)
			p.name, p.arch = fields["Package"], fields["Architecture"]
			p.version, p.release, _ = strings.Cut(fields["Version"], "-")
			p.license = fields["License"]
			for d := range strings.SplitSeq(fields["Depends"], ",") {
				if d = strings.TrimSpace(d); d != "" {
					p.depends = append(p.depends, d)
				}
			}
		case "data.tar.gz":
			entries, err := readTarGz(body)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, name, err)
			}
			for _, e := range entries {
				e.hdr.Name = strings.TrimPrefix(strings.TrimPrefix(e.hdr.Name, "."), "/")
				if e.hdr.Typeflag == tar.TypeDir {
					p.dirs = append(p.dirs, strings.TrimSuffix(e.hdr.Name, "/"))
					continue
				}
				p.files = append(p.files, e)
			}
		default:
			return nil, fmt.Errorf("%s: unexpected member %s", file, name)
		}
	}
	if want := []string{"debian-binary", "control.tar.gz", "data.tar.gz"}; !slices.Equal(members, want) {
		return nil, fmt.Errorf("%s: members %q, want %q", file, members, want)
	}
	slices.SortFunc(p.files, func(a, b entry) int { return cmp.Compare(a.hdr.Name, b.hdr.Name) })
	return p, nil
}

// readTarGz reads every entry of a gzip-compressed tar archive in memory.
func readTarGz(b []byte) ([]entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var entries []entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", hdr.Name, err)
		}
		entries = append(entries, entry{hdr: hdr, data: data})
	}
}

// parseControl reads a Debian control file's fields (continuation lines,
// which start with a space, are left out).
func parseControl(b []byte) map[string]string {
	fields := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}
