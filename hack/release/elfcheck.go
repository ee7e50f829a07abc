package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
)

// machines maps the GOARCHes a release is built for to their ELF machine.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// checkStaticELF checks that data is a 64-bit little-endian ELF executable
// for goarch's machine, statically linked: no program interpreter
// (PT_INTERP, the dynamic loader a dynamically linked executable names)
// and no shared library it needs (DT_NEEDED). A static PIE (ET_DYN without
// an interpreter) passes; a shared library or object file does not.
func checkStaticELF(data []byte, goarch string) error {
	want, ok := machines[goarch]
	if !ok {
		return fmt.Errorf("no ELF machine known for GOARCH %q", goarch)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	var errs []error
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		errs = append(errs, fmt.Errorf("%s %s, want ELFCLASS64 ELFDATA2LSB", f.Class, f.Data))
	}
	if f.Machine != want {
		errs = append(errs, fmt.Errorf("machine %s, want %s (%s)", f.Machine, want, goarch))
	}
	hasInterp := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			hasInterp = true
			interp, _ := readAllProg(p)
			errs = append(errs, fmt.Errorf("dynamically linked: program interpreter %q (PT_INTERP)", interp))
		}
	}
	switch f.Type {
	case elf.ET_EXEC:
	case elf.ET_DYN:
		if hasInterp {
			break // said above
		}
		// A static PIE has a dynamic section for its own relocations and
		// no interpreter; a shared library has no entry point.
		if f.Entry == 0 {
			errs = append(errs, errors.New("a shared object, not an executable"))
		}
	default:
		errs = append(errs, fmt.Errorf("type %s, want an executable", f.Type))
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		errs = append(errs, fmt.Errorf("reading the dynamic section: %w", err))
	}
	if len(libs) > 0 {
		errs = append(errs, fmt.Errorf("needs shared libraries %q (DT_NEEDED)", libs))
	}
	return errors.Join(errs...)
}

// readAllProg returns a program segment's content without its trailing NUL.
func readAllProg(p *elf.Prog) (string, error) {
	b := make([]byte, p.Filesz)
	if _, err := p.ReadAt(b, 0); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b, "\x00")), nil
}
