package main

import (
	"archive/tar"
	"bufio"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// file is one entry of a tarball: a regular file named name (relative,
// slash-separated), with mode 0755 or 0644, whose content is read from path.
type file struct {
	name string
	mode int64
	path string
}

// stagedFiles lists the regular files of a staging directory (a make
// install's DESTDIR), which must all be under prefix, as tarball entries
// relative to prefix, in name order; an executable (any x bit) gets mode
// 0755, anything else 0644. A file elsewhere (under /etc, say), a
// symbolic link or another special file is refused: nothing in a release
// is one.
func stagedFiles(dir string) ([]file, error) {
	root := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(prefix, "/")))
	var files []file
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (%s)", path, d.Type())
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || !filepath.IsLocal(rel) {
			abs, _ := filepath.Rel(dir, path)
			return fmt.Errorf("%s: /%s is not under %s, where a release's files go", path, filepath.ToSlash(abs), prefix)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if info.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		files = append(files, file{name: filepath.ToSlash(rel), mode: mode, path: path})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no files", dir)
	}
	return files, nil
}

// writeTarball writes files to out as a gzip-compressed tar archive, the
// same bytes for the same files and mtime: entries in name order, USTAR
// headers owned by root, every one dated mtime, no directory entries; a
// gzip header without name or time. It writes out.tmp and renames it.
func writeTarball(out string, files []file, mtime time.Time) (err error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.name, b.name) })
	for i, f := range files {
		if i > 0 && files[i-1].name == f.name {
			return fmt.Errorf("%s: %s twice", out, f.name)
		}
	}
	tmp := out + ".tmp"
	w, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			w.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriter(w)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := addFile(tw, f, mtime); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// addFile writes one entry: f's header, then its content, which must be
// as long as it was when the header was written.
func addFile(tw *tar.Writer, f file, mtime time.Time) error {
	if f.mode != 0o755 && f.mode != 0o644 {
		return fmt.Errorf("%s: mode %#o, want 0755 or 0644", f.name, f.mode)
	}
	r, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     f.name,
		Mode:     f.mode,
		Size:     info.Size(),
		ModTime:  mtime.UTC().Truncate(time.Second),
		Uname:    "root",
		Gname:    "root",
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if n != info.Size() {
		return fmt.Errorf("%s: changed while being written", f.name)
	}
	return nil
}

// entry is one entry of a tarball as read back: its header, and its
// content for regular files.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// readTarball reads every entry of a gzip-compressed tar archive.
func readTarball(path string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	var entries []entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, hdr.Name, err)
		}
		entries = append(entries, entry{hdr: hdr, data: data})
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}
