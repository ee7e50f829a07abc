package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/pins"
)

// testVersion is the version of the tests' releases: a dirty build after
// a pre-release tag, every part hack/version.sh can print.
const testVersion = "v0.1.0-rc.1-3-g0123456789ab-dirty"

// testMtime is the time of the tests' releases (SOURCE_DATE_EPOCH).
var testMtime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// testGoVersion is the Go version in the fake binaries' build info.
const testGoVersion = "go1.26.8"

// fakeExecutable is a static ELF executable for goarch, a few hundred
// bytes, that writes msg to its standard output and exits 0 whatever its
// arguments, and, when info is not nil, carries info as Go's linker
// writes build info: a .go.buildinfo section that debug/buildinfo reads.
// It stands in for a release's binaries in the tests, so that a release
// of them is small and fast to write and to check, and, built for this
// machine, runs.
//
// One PT_LOAD segment maps the whole file at 0x400000: the ELF header,
// the program header, the code, msg, the build info; the section headers
// (.go.buildinfo, .shstrtab) follow, outside the segment.
func fakeExecutable(goarch, msg string, info *debug.BuildInfo) []byte {
	const base = 0x400000
	const ehsize, phsize, shsize = 64, 56, 64
	le := binary.LittleEndian
	codeOff := ehsize + phsize
	var code []byte
	var machine elf.Machine
	switch goarch {
	case "amd64":
		machine = elf.EM_X86_64
		code = []byte{
			0xb8, 1, 0, 0, 0, // mov eax, 1 (write)
			0xbf, 1, 0, 0, 0, // mov edi, 1 (stdout)
			0x48, 0x8d, 0x35, 16, 0, 0, 0, // lea rsi, [rip+16]: msg, after the code
			0xba, 0, 0, 0, 0, // mov edx, len(msg)
			0x0f, 0x05, // syscall
			0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
			0x31, 0xff, // xor edi, edi
			0x0f, 0x05, // syscall
		}
		le.PutUint32(code[18:], uint32(len(msg)))
	case "arm64":
		machine = elf.EM_AARCH64
		for _, insn := range []uint32{
			0xd2800020,                       // mov x0, #1 (stdout)
			0x100000e1,                       // adr x1, #28: msg, after the code
			0xd2800002 | uint32(len(msg))<<5, // mov x2, #len(msg)
			0xd2800808,                       // mov x8, #64 (write)
			0xd4000001,                       // svc #0
			0xd2800000,                       // mov x0, #0
			0xd2800ba8,                       // mov x8, #93 (exit)
			0xd4000001,                       // svc #0
		} {
			code = le.AppendUint32(code, insn)
		}
	default:
		panic("no fake executable for " + goarch)
	}
	body := append(code, msg...)
	var sections []byte
	biOff := 0
	if info != nil {
		for (codeOff+len(body))%16 != 0 {
			body = append(body, 0)
		}
		biOff = codeOff + len(body)
		body = append(body, goBuildInfo(info)...)
	}
	segEnd := codeOff + len(body)

	// The section headers: null, .go.buildinfo and .shstrtab, or none.
	shstrtab := []byte("\x00.go.buildinfo\x00.shstrtab\x00")
	shoff, shnum, shstrndx := 0, 0, 0
	if info != nil {
		strOff := segEnd
		shoff = strOff + len(shstrtab)
		shnum, shstrndx = 3, 2
		sh := func(name, typ uint32, flags, addr, off, size, align uint64) {
			sections = le.AppendUint32(sections, name)
			sections = le.AppendUint32(sections, typ)
			sections = le.AppendUint64(sections, flags)
			sections = le.AppendUint64(sections, addr)
			sections = le.AppendUint64(sections, off)
			sections = le.AppendUint64(sections, size)
			sections = le.AppendUint32(sections, 0) // link
			sections = le.AppendUint32(sections, 0) // info
			sections = le.AppendUint64(sections, align)
			sections = le.AppendUint64(sections, 0) // entsize
		}
		sh(0, 0, 0, 0, 0, 0, 0)
		sh(1, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC|elf.SHF_WRITE), base+uint64(biOff), uint64(biOff), uint64(segEnd-biOff), 16)
		sh(15, uint32(elf.SHT_STRTAB), 0, 0, uint64(strOff), uint64(len(shstrtab)), 1)
	}

	var b []byte
	b = append(b, 0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), byte(elf.ELFOSABI_NONE))
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint16(b, uint16(elf.ET_EXEC))
	b = le.AppendUint16(b, uint16(machine))
	b = le.AppendUint32(b, uint32(elf.EV_CURRENT))
	b = le.AppendUint64(b, base+uint64(codeOff)) // entry
	b = le.AppendUint64(b, ehsize)               // phoff
	b = le.AppendUint64(b, uint64(shoff))
	b = le.AppendUint32(b, 0) // flags
	b = le.AppendUint16(b, ehsize)
	b = le.AppendUint16(b, phsize)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, shsize)
	b = le.AppendUint16(b, uint16(shnum))
	b = le.AppendUint16(b, uint16(shstrndx))
	// PT_LOAD, read and execute, the whole segment.
	b = le.AppendUint32(b, uint32(elf.PT_LOAD))
	b = le.AppendUint32(b, uint32(elf.PF_R|elf.PF_X))
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, uint64(segEnd))
	b = le.AppendUint64(b, uint64(segEnd))
	b = le.AppendUint64(b, 0x1000)
	b = append(b, body...)
	if info != nil {
		b = append(b, shstrtab...)
		b = append(b, sections...)
	}
	return b
}

// goBuildInfo is the build info blob Go's linker writes since Go 1.18
// (cmd/link's buildinfo, as debug/buildinfo reads it): a 32-byte header
// (magic, pointer size, flags: strings inline, little-endian), then the
// Go version and the module info as varint-prefixed strings, the module
// info between the 16-byte markers cmd/go puts around it.
func goBuildInfo(info *debug.BuildInfo) []byte {
	const infoStart = "\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6"
	const infoEnd = "\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2"
	b := []byte("\xff Go buildinf:")
	b = append(b, 8, 2)
	b = append(b, make([]byte, 32-len(b))...)
	for _, s := range []string{info.GoVersion, infoStart + info.String() + infoEnd} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// fakeBuildInfo is the build info of a fake binary of main module main
// for goarch: three dependencies, one from the module proxy, one with
// "+incompatible" in its version, and github.com/containerd/nri replaced
// by a directory, as the runtimes' builds replace it by compat/nri.
func fakeBuildInfo(main, goarch string) *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: testGoVersion,
		Path:      main + "/cmd/fake",
		Main:      debug.Module{Path: main, Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/BurntSushi/toml", Version: "v1.6.0", Sum: "h1:dRaEfpa2VI55EwlIW72hMRHdWouJeRF7TPYhI+AUQjk="},
			{Path: "github.com/containerd/nri", Version: pins.NRI, Replace: &debug.Module{Path: "/src/nrinet/compat/nri", Version: "(devel)"}},
			{Path: "github.com/docker/cli", Version: "v29.7.2+incompatible", Sum: "h1:dOj/Ig8pT6d3pWmMvqXFYVtqaJ2LOoSuYGSWTTZLgYI="},
		},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"},
			{Key: "GOARCH", Value: goarch}, {Key: "GOOS", Value: "linux"},
		},
	}
}

// fakeMainModules are the main modules of each product's fake binaries,
// as the real ones have them.
var fakeMainModules = map[string]string{
	"nrinet":     nrinetModule + "/cmd",
	"containerd": "github.com/containerd/containerd/v2",
	"crio":       "github.com/cri-o/cri-o",
}

// fakeStage stages a product as make install would, with test files: a
// fake executable for every binary (printing "<name> <testVersion>",
// with build info but for C programs), a line of text for every other
// file, the text files with mode 0600 so that the modes must be
// normalized.
func fakeStage(_ context.Context, p product, arch, dir string) error {
	for _, f := range p.files {
		name := path.Join(strings.TrimPrefix(prefix, "/"), f.name)
		data, mode := []byte("text of "+f.name+"\n"), os.FileMode(0o600)
		if f.elf {
			var info *debug.BuildInfo
			if f.cSource == "" {
				info = fakeBuildInfo(fakeMainModules[p.name], arch)
			}
			data, mode = fakeExecutable(arch, path.Base(f.name)+" "+testVersion+"\n", info), 0o700
		}
		file := dir + "/" + name
		if err := os.MkdirAll(path.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, data, mode); err != nil {
			return err
		}
	}
	return nil
}

// fakeRelease writes a release of testVersion for arches into a new
// directory, as run does, from fakeStage's files.
func fakeRelease(t testing.TB, arches []string) string {
	t.Helper()
	out := t.TempDir()
	o := options{version: testVersion, out: out, arches: arches}
	if _, err := buildRelease(context.Background(), o, testMtime, fakeStage, io.Discard); err != nil {
		t.Fatalf("buildRelease: %v", err)
	}
	return out
}

func TestFakeExecutable(t *testing.T) {
	info := fakeBuildInfo(nrinetModule+"/cmd", "amd64")
	for _, arch := range defaultArches {
		b := fakeExecutable(arch, "hello\n", info)
		if err := checkStaticELF(b, arch); err != nil {
			t.Errorf("%s: %v", arch, err)
		}
		got, err := readBuildInfo(b)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if got.String() != info.String() || got.GoVersion != testGoVersion {
			t.Errorf("%s: build info\n%s\nwant\n%s", arch, got, info)
		}
		if _, err := readBuildInfo(fakeExecutable(arch, "hello\n", nil)); err == nil {
			t.Errorf("%s: build info read from an executable without", arch)
		}
	}
	// This machine runs its own.
	if _, ok := machines[runtime.GOARCH]; !ok {
		return
	}
	exe := t.TempDir() + "/hello"
	if err := os.WriteFile(exe, fakeExecutable(runtime.GOARCH, "hello\n", info), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "-version").CombinedOutput()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("running it: %q, %v", out, err)
	}
}

// listDir returns the names in dir, in order.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// mustRun runs a command in dir and returns its standard output, failing
// the test with its standard error.
func mustRun(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// sprintLines formats names one per line, indented, for messages.
func sprintLines(names []string) string {
	return fmt.Sprintf("\t%s", strings.Join(names, "\n\t"))
}

// readBuildInfo reads Go build info from an executable's bytes.
func readBuildInfo(b []byte) (*debug.BuildInfo, error) {
	return buildinfo.Read(bytes.NewReader(b))
}
