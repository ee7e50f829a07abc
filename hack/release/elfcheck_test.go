package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
)

// elfSpec describes a small ELF64 little-endian file for the tests: only
// what checkStaticELF reads, no code.
type elfSpec struct {
	machine elf.Machine
	typ     elf.Type
	entry   uint64
	interp  string   // a PT_INTERP segment naming it, if set
	needed  []string // DT_NEEDED entries in a .dynamic section, if any
}

// buildELF lays out: the ELF header, the program headers (PT_LOAD, and
// PT_INTERP), the interpreter's name, then with needed libraries
// .dynstr, .dynamic, .shstrtab and the section headers.
func buildELF(s elfSpec) []byte {
	const ehsize, phentsize, shentsize = 64, 56, 64
	le := binary.LittleEndian
	nph := 1
	if s.interp != "" {
		nph++
	}
	off := uint64(ehsize + nph*phentsize)
	interpOff := off
	interp := []byte(s.interp + "\x00")
	if s.interp != "" {
		off += uint64(len(interp))
	}

	var dynstr, dynamic, shstrtab []byte
	var shoff uint64
	var shnum, shstrndx uint16
	if len(s.needed) > 0 {
		dynstr = []byte{0}
		for _, lib := range s.needed {
			dynamic = le.AppendUint64(dynamic, uint64(elf.DT_NEEDED))
			dynamic = le.AppendUint64(dynamic, uint64(len(dynstr)))
			dynstr = append(dynstr, lib+"\x00"...)
		}
		dynamic = le.AppendUint64(dynamic, uint64(elf.DT_NULL))
		dynamic = le.AppendUint64(dynamic, 0)
		shstrtab = []byte("\x00.dynstr\x00.dynamic\x00.shstrtab\x00")
	}
	dynstrOff := off
	off += uint64(len(dynstr))
	dynamicOff := off
	off += uint64(len(dynamic))
	shstrtabOff := off
	off += uint64(len(shstrtab))
	if len(s.needed) > 0 {
		shoff, shnum, shstrndx = off, 4, 3
		off += 4 * shentsize
	}

	var b []byte
	b = append(b, 0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT))
	b = append(b, make([]byte, 16-len(b))...)
	b = le.AppendUint16(b, uint16(s.typ))
	b = le.AppendUint16(b, uint16(s.machine))
	b = le.AppendUint32(b, uint32(elf.EV_CURRENT))
	b = le.AppendUint64(b, s.entry)
	b = le.AppendUint64(b, ehsize) // phoff
	b = le.AppendUint64(b, shoff)
	b = le.AppendUint32(b, 0) // flags
	b = le.AppendUint16(b, ehsize)
	b = le.AppendUint16(b, phentsize)
	b = le.AppendUint16(b, uint16(nph))
	b = le.AppendUint16(b, shentsize)
	b = le.AppendUint16(b, shnum)
	b = le.AppendUint16(b, shstrndx)

	prog := func(typ elf.ProgType, o, size uint64) {
		b = le.AppendUint32(b, uint32(typ))
		b = le.AppendUint32(b, uint32(elf.PF_R))
		b = le.AppendUint64(b, o)      // offset
		b = le.AppendUint64(b, o)      // vaddr
		b = le.AppendUint64(b, o)      // paddr
		b = le.AppendUint64(b, size)   // filesz
		b = le.AppendUint64(b, size)   // memsz
		b = le.AppendUint64(b, 0x1000) // align
	}
	prog(elf.PT_LOAD, 0, off)
	if s.interp != "" {
		prog(elf.PT_INTERP, interpOff, uint64(len(interp)))
		b = append(b, interp...)
	}
	b = append(b, dynstr...)
	b = append(b, dynamic...)
	b = append(b, shstrtab...)
	if len(s.needed) > 0 {
		section := func(name uint32, typ elf.SectionType, o, size uint64, link uint32, entsize uint64) {
			b = le.AppendUint32(b, name)
			b = le.AppendUint32(b, uint32(typ))
			b = le.AppendUint64(b, 0) // flags
			b = le.AppendUint64(b, 0) // addr
			b = le.AppendUint64(b, o)
			b = le.AppendUint64(b, size)
			b = le.AppendUint32(b, link)
			b = le.AppendUint32(b, 0) // info
			b = le.AppendUint64(b, 1) // addralign
			b = le.AppendUint64(b, entsize)
		}
		section(0, elf.SHT_NULL, 0, 0, 0, 0)
		section(1, elf.SHT_STRTAB, dynstrOff, uint64(len(dynstr)), 0, 0)
		section(9, elf.SHT_DYNAMIC, dynamicOff, uint64(len(dynamic)), 1, 16)
		section(18, elf.SHT_STRTAB, shstrtabOff, uint64(len(shstrtab)), 0, 0)
	}
	return b
}

// staticELF is what a static Go binary for goarch looks like to the checker.
func staticELF(goarch string) []byte {
	return buildELF(elfSpec{machine: machines[goarch], typ: elf.ET_EXEC, entry: 0x401000})
}

func TestBuildELF(t *testing.T) {
	// The test files must be ones debug/elf reads as meant, or the
	// checker's tests below prove nothing.
	f, err := elf.NewFile(bytes.NewReader(buildELF(elfSpec{
		machine: elf.EM_AARCH64, typ: elf.ET_DYN, entry: 0x1000,
		interp: "/lib/ld-linux-aarch64.so.1", needed: []string{"libc.so.6", "libpthread.so.0"},
	})))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_DYN || len(f.Progs) != 2 || f.Progs[1].Type != elf.PT_INTERP {
		t.Errorf("read back machine %s, type %s, %d program headers", f.Machine, f.Type, len(f.Progs))
	}
	libs, err := f.ImportedLibraries()
	if err != nil || strings.Join(libs, ",") != "libc.so.6,libpthread.so.0" {
		t.Errorf("ImportedLibraries() = %q, %v", libs, err)
	}
}

func TestCheckStaticELF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		goarch string
		want   []string // substrings of the error; none: no error
	}{
		{name: "static amd64", data: staticELF("amd64"), goarch: "amd64"},
		{name: "static arm64", data: staticELF("arm64"), goarch: "arm64"},
		{name: "static PIE", data: buildELF(elfSpec{machine: elf.EM_X86_64, typ: elf.ET_DYN, entry: 0x1000}), goarch: "amd64"},
		{name: "wrong machine", data: staticELF("arm64"), goarch: "amd64", want: []string{"machine EM_AARCH64, want EM_X86_64"}},
		{name: "interpreter", goarch: "amd64",
			data: buildELF(elfSpec{machine: elf.EM_X86_64, typ: elf.ET_EXEC, entry: 1, interp: "/lib64/ld-linux-x86-64.so.2"}),
			want: []string{`dynamically linked: program interpreter "/lib64/ld-linux-x86-64.so.2"`}},
		{name: "needed libraries", goarch: "arm64",
			data: buildELF(elfSpec{machine: elf.EM_AARCH64, typ: elf.ET_EXEC, entry: 1, needed: []string{"libc.so.6"}}),
			want: []string{`needs shared libraries ["libc.so.6"]`}},
		{name: "dynamic, everything wrong", goarch: "arm64",
			data: buildELF(elfSpec{machine: elf.EM_X86_64, typ: elf.ET_DYN, entry: 1, interp: "/lib64/ld.so", needed: []string{"libc.so.6"}}),
			want: []string{"machine EM_X86_64", "PT_INTERP", "DT_NEEDED"}},
		{name: "shared object", data: buildELF(elfSpec{machine: elf.EM_X86_64, typ: elf.ET_DYN}), goarch: "amd64",
			want: []string{"a shared object"}},
		{name: "object file", data: buildELF(elfSpec{machine: elf.EM_X86_64, typ: elf.ET_REL}), goarch: "amd64",
			want: []string{"type ET_REL, want an executable"}},
		{name: "script", data: []byte("#!/bin/sh\necho hi\n"), goarch: "amd64", want: []string{"not an ELF file"}},
		{name: "unknown arch", data: staticELF("amd64"), goarch: "riscv64", want: []string{`no ELF machine known for GOARCH "riscv64"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkStaticELF(tc.data, tc.goarch)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("checkStaticELF: %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkStaticELF: no error, want one with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("checkStaticELF: %v, want %q in it", err, w)
				}
			}
		})
	}
}
