package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RPM header tags read back (rpm's lib/rpmtag.h).
const (
	rpmTagName              = 1000
	rpmTagVersion           = 1001
	rpmTagRelease           = 1002
	rpmTagLicense           = 1014
	rpmTagArch              = 1022
	rpmTagFileModes         = 1030
	rpmTagFileMtimes        = 1034
	rpmTagFileUserName      = 1039
	rpmTagFileGroupName     = 1040
	rpmTagRequireName       = 1049
	rpmTagDirIndexes        = 1116
	rpmTagBaseNames         = 1117
	rpmTagDirNames          = 1118
	rpmTagPayloadCompressor = 1125
)

// rpmHeader is an RPM header structure's tags: each tag's type and raw
// value (from its offset in the data store to the next entry's).
type rpmHeader map[int32]rpmTag

type rpmTag struct {
	typ   uint32
	count uint32
	data  []byte // from the tag's offset to the end of the store
}

// readRPMHeader reads one header structure (magic 8e ad e8 01, 4 reserved
// bytes, the index count, the store size, the index, the store).
func readRPMHeader(r io.Reader) (rpmHeader, int, error) {
	var pre [16]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(pre[:4], []byte{0x8e, 0xad, 0xe8, 0x01}) {
		return nil, 0, fmt.Errorf("bad header magic % x", pre[:4])
	}
	n, size := binary.BigEndian.Uint32(pre[8:]), binary.BigEndian.Uint32(pre[12:])
	if n > 1<<16 || size > 1<<28 {
		return nil, 0, fmt.Errorf("header of %d tags, %d bytes: too large", n, size)
	}
	index := make([]byte, 16*n)
	store := make([]byte, size)
	if _, err := io.ReadFull(r, index); err != nil {
		return nil, 0, err
	}
	if _, err := io.ReadFull(r, store); err != nil {
		return nil, 0, err
	}
	h := rpmHeader{}
	for i := range n {
		e := index[16*i:]
		tag, typ := int32(binary.BigEndian.Uint32(e)), binary.BigEndian.Uint32(e[4:])
		off, count := binary.BigEndian.Uint32(e[8:]), binary.BigEndian.Uint32(e[12:])
		if off > size {
			return nil, 0, fmt.Errorf("tag %d: offset %d past the store (%d)", tag, off, size)
		}
		h[tag] = rpmTag{typ: typ, count: count, data: store[off:]}
	}
	return h, 16 + len(index) + len(store), nil
}

// strings returns a tag of type STRING (6), STRING_ARRAY (8) or
// I18NSTRING (9) as its strings.
func (h rpmHeader) strings(tag int32) []string {
	t, ok := h[tag]
	if !ok || (t.typ != 6 && t.typ != 8 && t.typ != 9) {
		return nil
	}
	var out []string
	data := t.data
	for range t.count {
		s, rest, ok := bytes.Cut(data, []byte{0})
		if !ok {
			break
		}
		out, data = append(out, string(s)), rest
	}
	return out
}

// string returns the first string of a string tag.
func (h rpmHeader) string(tag int32) string {
	if s := h.strings(tag); len(s) > 0 {
		return s[0]
	}
	return ""
}

// ints returns a tag of type INT16 (3) or INT32 (4) as its values.
func (h rpmHeader) ints(tag int32) []int64 {
	t, ok := h[tag]
	if !ok {
		return nil
	}
	var out []int64
	for i := range int(t.count) {
		switch t.typ {
		case 3:
			if 2*i+2 <= len(t.data) {
				out = append(out, int64(binary.BigEndian.Uint16(t.data[2*i:])))
			}
		case 4:
			if 4*i+4 <= len(t.data) {
				out = append(out, int64(binary.BigEndian.Uint32(t.data[4*i:])))
			}
		}
	}
	return out
}

// readRPM reads an .rpm: a 96-byte lead, the signature header (padded to
// 8 bytes), the header, and the payload, a gzip-compressed cpio archive
// (newc) whose files the header describes (modes, owners, times).
func readRPM(file string) (*pkg, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	lead := make([]byte, 96)
	if _, err := io.ReadFull(r, lead); err != nil || !bytes.Equal(lead[:4], []byte{0xed, 0xab, 0xee, 0xdb}) {
		return nil, fmt.Errorf("%s: not an RPM (lead % x, %v)", file, lead[:4], err)
	}
	_, n, err := readRPMHeader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: signature header: %w", file, err)
	}
	if pad := (8 - n%8) % 8; pad > 0 {
		if _, err := io.CopyN(io.Discard, r, int64(pad)); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	h, _, err := readRPMHeader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", file, err)
	}
	p := &pkg{
		name: h.string(rpmTagName), version: h.string(rpmTagVersion), release: h.string(rpmTagRelease),
		arch: h.string(rpmTagArch), license: h.string(rpmTagLicense), depends: h.strings(rpmTagRequireName),
	}
	if c := h.string(rpmTagPayloadCompressor); c != "gzip" {
		return nil, fmt.Errorf("%s: payload compressed with %q, want gzip", file, c)
	}
	// The header's file list: dirnames[dirindexes[i]] + basenames[i].
	base, dirs, dirIdx := h.strings(rpmTagBaseNames), h.strings(rpmTagDirNames), h.ints(rpmTagDirIndexes)
	modes, mtimes := h.ints(rpmTagFileModes), h.ints(rpmTagFileMtimes)
	users, groups := h.strings(rpmTagFileUserName), h.strings(rpmTagFileGroupName)
	for _, n := range []int{len(dirIdx), len(modes), len(mtimes), len(users), len(groups)} {
		if n != len(base) {
			return nil, fmt.Errorf("%s: header file lists of %d and %d entries", file, len(base), n)
		}
	}
	byName := map[string]*tar.Header{}
	for i, b := range base {
		if int(dirIdx[i]) >= len(dirs) {
			return nil, fmt.Errorf("%s: file %s: directory index %d of %d", file, b, dirIdx[i], len(dirs))
		}
		name := strings.TrimPrefix(dirs[dirIdx[i]]+b, "/")
		mode := modes[i]
		// rpm records owners by name only (Uid and Gid stay 0 here): rpm
		// installs them as the node's users of those names.
		hdr := &tar.Header{
			Name: name, Mode: mode & 0o7777, Uname: users[i], Gname: groups[i],
			ModTime: time.Unix(mtimes[i], 0).UTC(), Typeflag: tar.TypeReg,
		}
		switch mode & 0o170000 {
		case 0o100000:
		case 0o040000:
			p.dirs = append(p.dirs, name)
			continue
		default:
			hdr.Typeflag = tar.TypeSymlink // or another special file: checkEntries refuses it
		}
		byName[name] = hdr
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: payload: %w", file, err)
	}
	err = readCpio(zr, func(name string, data []byte) error {
		name = strings.TrimPrefix(strings.TrimPrefix(name, "."), "/")
		hdr, ok := byName[name]
		if !ok {
			return nil // a directory, or not in the header: compared below
		}
		hdr.Size = int64(len(data))
		p.files = append(p.files, entry{hdr: hdr, data: data})
		delete(byName, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: payload: %w", file, err)
	}
	for name := range byName {
		return nil, fmt.Errorf("%s: %s is in the header but not in the payload", file, name)
	}
	slices.SortFunc(p.files, func(a, b entry) int { return cmp.Compare(a.hdr.Name, b.hdr.Name) })
	return p, nil
}

// readCpio calls fn for every entry of a cpio archive in the "newc" format
// (070701, what rpm's payloads use) up to its TRAILER!!! entry.
func readCpio(r io.Reader, fn func(name string, data []byte) error) error {
	br := bufio.NewReader(r)
	var off int64
	skip := func(n int64) error {
		_, err := io.CopyN(io.Discard, br, n)
		off += n
		return err
	}
	pad := func() error { return skip((4 - off%4) % 4) }
	for {
		var hdr [110]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return fmt.Errorf("cpio header: %w", err)
		}
		off += 110
		if string(hdr[:6]) != "070701" {
			return fmt.Errorf("cpio magic %q, want 070701 (newc)", hdr[:6])
		}
		field := func(i int) (int64, error) {
			return strconv.ParseInt(string(hdr[6+8*i:6+8*i+8]), 16, 64)
		}
		size, err1 := field(6)
		nameSize, err2 := field(11)
		if err := errors.Join(err1, err2); err != nil || nameSize < 1 || nameSize > 4096 || size > 1<<32 {
			return fmt.Errorf("cpio header %q: %v", hdr, err)
		}
		name := make([]byte, nameSize)
		if _, err := io.ReadFull(br, name); err != nil {
			return err
		}
		off += nameSize
		if err := pad(); err != nil {
			return err
		}
		n := string(bytes.TrimRight(name, "\x00"))
		if n == "TRAILER!!!" {
			return nil
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		off += size
		if err := pad(); err != nil {
			return err
		}
		if err := fn(n, data); err != nil {
			return err
		}
	}
}
