package main

import (
	"archive/tar"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/nrinet/nrinet/internal/pins"
)

func TestSBOM(t *testing.T) {
	dir := fakeRelease(t, []string{"arm64"})
	p := productNamed("containerd")
	file := filepath.Join(dir, sbomName(p, testVersion, "arm64"))
	bom, err := readSBOM(file)
	if err != nil {
		t.Fatal(err)
	}
	tarball := tarballName(p, testVersion, "arm64")
	sum, err := fileSHA256(filepath.Join(dir, tarball))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("metadata", func(t *testing.T) {
		if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != cdx.SpecVersion1_6 || bom.Version != 1 {
			t.Errorf("%s %s version %d, want CycloneDX 1.6, version 1", bom.BOMFormat, bom.SpecVersion, bom.Version)
		}
		if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(bom.SerialNumber) {
			t.Errorf("serial number %q, want a UUID URN", bom.SerialNumber)
		}
		m := bom.Metadata
		if m.Timestamp != testMtime.Format(time.RFC3339) {
			t.Errorf("timestamp %s, want the release's time %s", m.Timestamp, testMtime.Format(time.RFC3339))
		}
		c := m.Component
		if c.Name != "containerd-nrinet" || c.Version != testVersion || c.BOMRef != tarball || hashOf(*c) != sum {
			t.Errorf("component %s %s %s %s, want containerd-nrinet %s, the tarball %s %s", c.Name, c.Version, c.BOMRef, hashOf(*c), testVersion, tarball, sum)
		}
		if c.Licenses == nil || (*c.Licenses)[0].License.ID != "Apache-2.0" {
			t.Errorf("component licenses %v, want Apache-2.0", c.Licenses)
		}
	})

	byRef := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byRef[c.BOMRef] = c
	}
	deps := map[string][]string{}
	for _, d := range *bom.Dependencies {
		if d.Dependencies != nil {
			deps[d.Ref] = *d.Dependencies
		}
	}

	t.Run("files", func(t *testing.T) {
		entries, err := readTarball(filepath.Join(dir, tarball))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.hdr.Name)
			c, ok := byRef[e.hdr.Name]
			wantType := cdx.ComponentTypeFile
			if isELF(e.data) {
				wantType = cdx.ComponentTypeApplication
			}
			if !ok || c.Type != wantType || c.Name != e.hdr.Name || hashOf(c) == "" {
				t.Errorf("%s: component %+v, want a %s with its hash", e.hdr.Name, c, wantType)
			}
		}
		if got := deps[tarball]; !slices.Equal(got, names) {
			t.Errorf("the product depends on %q, want its files %q", got, names)
		}
	})

	t.Run("binaries", func(t *testing.T) {
		// Every binary is containerd's fake: its main module
		// containerd's at its release, with nrinet's patches; TOML and
		// docker/cli from the module proxy with go.sum's hash;
		// github.com/containerd/nri replaced by a directory, so nrinet's
		// compat/nri at the release's version; the standard library.
		stdlib := "pkg:golang/stdlib@1.26.8"
		toml := "pkg:golang/github.com/BurntSushi/toml@v1.6.0"
		cli := "pkg:golang/github.com/docker/cli@v29.7.2%2Bincompatible"
		nri := "pkg:golang/github.com/nrinet/nrinet@" + testVersion + "#compat/nri"
		for _, b := range []string{"bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr"} {
			c := byRef[b]
			if c.PackageURL != "pkg:golang/github.com/containerd/containerd/v2@"+containerdVersion || c.Version != containerdVersion {
				t.Errorf("%s: purl %s version %s, want containerd's at %s", b, c.PackageURL, c.Version, containerdVersion)
			}
			if c.Pedigree == nil || !strings.Contains(c.Pedigree.Notes, "hack/containerd-patches") {
				t.Errorf("%s: pedigree %+v, want nrinet's patch series named", b, c.Pedigree)
			}
			props := map[string]string{}
			for _, p := range *c.Properties {
				props[p.Name] = p.Value
			}
			if props["golang:goversion"] != testGoVersion || props["golang:build:GOARCH"] != "arm64" ||
				props["golang:build:CGO_ENABLED"] != "0" || props["golang:main"] != "github.com/containerd/containerd/v2" {
				t.Errorf("%s: properties %v", b, props)
			}
			want := []string{toml, cli, nri, stdlib}
			slices.Sort(want)
			if got := deps[b]; !slices.Equal(got, want) {
				t.Errorf("%s depends on %q, want %q", b, got, want)
			}
		}
		for ref, want := range map[string]struct{ name, version, prop, value string }{
			stdlib: {"stdlib", testGoVersion, "", ""},
			toml:   {"github.com/BurntSushi/toml", "v1.6.0", "golang:sum", "h1:dRaEfpa2"},
			cli:    {"github.com/docker/cli", "v29.7.2+incompatible", "golang:sum", "h1:"},
			nri:    {"github.com/containerd/nri", testVersion, "golang:replaces", "github.com/containerd/nri@" + pins.NRI},
		} {
			c, ok := byRef[ref]
			if !ok || c.Type != cdx.ComponentTypeLibrary || c.Name != want.name || c.Version != want.version || c.PackageURL != ref {
				t.Errorf("%s: %+v, want library %s %s", ref, c, want.name, want.version)
				continue
			}
			if want.prop == "" {
				continue
			}
			found := false
			for _, p := range *c.Properties {
				found = found || p.Name == want.prop && strings.HasPrefix(p.Value, want.value)
			}
			if !found {
				t.Errorf("%s: properties %v, want %s=%s...", ref, *c.Properties, want.prop, want.value)
			}
		}
		if len(*bom.Components) != 8+4 {
			t.Errorf("%d components, want the tarball's 8 files and 4 modules", len(*bom.Components))
		}
	})

	t.Run("C program", func(t *testing.T) {
		// pinns, in CRI-O's tarball: no Go build info; its source.
		crio := productNamed("crio")
		b, err := readSBOM(filepath.Join(dir, sbomName(crio, testVersion, "arm64")))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range *b.Components {
			if c.BOMRef == "bin/pinns" {
				if c.Type != cdx.ComponentTypeApplication || c.PackageURL != "pkg:github/cri-o/cri-o@"+crioVersion+"#pinns" || c.Version != crioVersion {
					t.Errorf("bin/pinns: %s %s %s, want an application from CRI-O %s's pinns/", c.Type, c.PackageURL, c.Version, crioVersion)
				}
				return
			}
		}
		t.Error("no bin/pinns")
	})

	t.Run("plain JSON", func(t *testing.T) {
		// What tools without a CycloneDX library read.
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		type component struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			PURL    string `json:"purl"`
		}
		var v struct {
			BOMFormat   string      `json:"bomFormat"`
			SpecVersion string      `json:"specVersion"`
			Components  []component `json:"components"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.BOMFormat != "CycloneDX" || v.SpecVersion != "1.6" {
			t.Fatalf("%v: %s %s", err, v.BOMFormat, v.SpecVersion)
		}
		if !slices.ContainsFunc(v.Components, func(c component) bool {
			return c.Name == "github.com/BurntSushi/toml" && c.Version == "v1.6.0" && c.PURL == "pkg:golang/github.com/BurntSushi/toml@v1.6.0"
		}) {
			t.Errorf("no github.com/BurntSushi/toml v1.6.0 among %d components", len(v.Components))
		}
	})

	t.Run("checkSBOMFile finds", func(t *testing.T) {
		entries, err := readTarball(filepath.Join(dir, tarball))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSBOMFile(file, p, testVersion, "arm64", entries, sum); err != nil {
			t.Fatalf("a good SBOM: %v", err)
		}
		for _, tc := range []struct {
			name   string
			change func(*cdx.BOM)
			want   string
		}{
			{"module dropped", func(b *cdx.BOM) {
				*b.Components = slices.DeleteFunc(*b.Components, func(c cdx.Component) bool { return c.Name == "github.com/BurntSushi/toml" })
			}, "links github.com/BurntSushi/toml v1.6.0: not a component at that version"},
			{"other version", func(b *cdx.BOM) {
				for i, c := range *b.Components {
					if c.Name == "github.com/BurntSushi/toml" {
						(*b.Components)[i].Version = "v1.5.0"
					}
				}
			}, "links github.com/BurntSushi/toml v1.6.0"},
			{"file hash", func(b *cdx.BOM) {
				for i, c := range *b.Components {
					if c.BOMRef == "bin/ctr" {
						(*b.Components)[i].Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: strings.Repeat("0", 64)}}
					}
				}
			}, "bin/ctr: no component with its SHA-256"},
			{"stray component", func(b *cdx.BOM) {
				*b.Components = append(*b.Components, cdx.Component{BOMRef: "pkg:golang/x@v1", Type: cdx.ComponentTypeLibrary, Name: "x"})
			}, "component pkg:golang/x@v1: neither"},
			{"other tarball", func(b *cdx.BOM) { b.Metadata.Component.Hashes = nil }, "its component is not containerd-nrinet"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, err := readSBOM(file)
				if err != nil {
					t.Fatal(err)
				}
				tc.change(b)
				changed := filepath.Join(t.TempDir(), "x.cdx.json")
				f, err := os.Create(changed)
				if err != nil {
					t.Fatal(err)
				}
				if err := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).EncodeVersion(b, sbomSpec); err != nil {
					t.Fatal(err)
				}
				f.Close()
				err = checkSBOMFile(changed, p, testVersion, "arm64", entries, sum)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("checkSBOMFile: %v\nwant %q in it", err, tc.want)
				}
			})
		}
	})
}

func TestLinkedModule(t *testing.T) {
	const v = "v0.1.0"
	for _, tc := range []struct {
		name string
		m    debug.Module
		want goModule
		err  string
	}{
		{"from the proxy", debug.Module{Path: "golang.org/x/sys", Version: "v0.41.0", Sum: "h1:x"},
			goModule{path: "golang.org/x/sys", version: "v0.41.0", sum: "h1:x", purl: "pkg:golang/golang.org/x/sys@v0.41.0"}, ""},
		{"incompatible", debug.Module{Path: "github.com/docker/cli", Version: "v29.7.2+incompatible"},
			goModule{path: "github.com/docker/cli", version: "v29.7.2+incompatible", purl: "pkg:golang/github.com/docker/cli@v29.7.2%2Bincompatible"}, ""},
		{"replaced by a module", debug.Module{Path: "a.example/m", Version: "v1.0.0", Replace: &debug.Module{Path: "b.example/m", Version: "v1.1.0", Sum: "h1:y"}},
			goModule{path: "b.example/m", version: "v1.1.0", sum: "h1:y", purl: "pkg:golang/b.example/m@v1.1.0", replaces: "a.example/m@v1.0.0"}, ""},
		{"compat/nri", debug.Module{Path: "github.com/containerd/nri", Version: "v0.11.0", Replace: &debug.Module{Path: "/src/nrinet/compat/nri", Version: "(devel)"}},
			goModule{path: "github.com/containerd/nri", version: v, purl: "pkg:golang/github.com/nrinet/nrinet@v0.1.0#compat/nri", replaces: "github.com/containerd/nri@v0.11.0"}, ""},
		{"nrinet replaced by its directory", debug.Module{Path: "github.com/nrinet/nrinet", Version: "v0.0.0", Replace: &debug.Module{Path: "/src/nrinet"}},
			goModule{path: "github.com/nrinet/nrinet", version: v, purl: "pkg:golang/github.com/nrinet/nrinet@v0.1.0", replaces: "github.com/nrinet/nrinet@v0.0.0"}, ""},
		{"nrinet in the workspace", debug.Module{Path: "github.com/nrinet/nrinet/plugins", Version: "(devel)"},
			goModule{path: "github.com/nrinet/nrinet/plugins", version: v, purl: "pkg:golang/github.com/nrinet/nrinet/plugins@v0.1.0"}, ""},
		{"someone else's directory", debug.Module{Path: "a.example/m", Version: "v1.0.0", Replace: &debug.Module{Path: "../m"}},
			goModule{}, "a.example/m replaced by the directory ../m: module a.example/m has no version and is not one of nrinet's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := linkedModule(&tc.m, v)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("linkedModule: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("linkedModule = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMainModule(t *testing.T) {
	for _, tc := range []struct {
		m             debug.Module
		purl, patches string
	}{
		{debug.Module{Path: "github.com/containerd/containerd/v2", Version: "(devel)"}, "pkg:golang/github.com/containerd/containerd/v2@" + containerdVersion, "hack/containerd-patches"},
		{debug.Module{Path: "github.com/cri-o/cri-o", Version: "(devel)"}, "pkg:golang/github.com/cri-o/cri-o@" + crioVersion, "hack/crio-patches"},
		{debug.Module{Path: "github.com/nrinet/nrinet/cmd", Version: "(devel)"}, "pkg:golang/github.com/nrinet/nrinet/cmd@v0.1.0", ""},
	} {
		got, patches, err := mainModule(tc.m, "v0.1.0")
		if err != nil || got.purl != tc.purl || patches != tc.patches {
			t.Errorf("mainModule(%s) = %s %q, %v; want %s %q", tc.m.Path, got.purl, patches, err, tc.purl, tc.patches)
		}
	}
}

// goBuiltMain is a program with a main module of nrinet's, a dependency
// from the module proxy (TOML, which this module requires too, so it is
// in the module cache), and github.com/containerd/nri replaced by a
// directory, as the runtimes' builds replace it by compat/nri.
var goBuiltMain = map[string]string{
	"go.mod": `module github.com/nrinet/nrinet/fakecmd

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/containerd/nri ` + pins.NRI + `
)

replace github.com/containerd/nri => ./nri
`,
	"main.go": `package main

import (
	"fmt"

	"github.com/BurntSushi/toml"
	"github.com/containerd/nri"
)

func main() {
	var v struct{ A int }
	_, err := toml.Decode("a = 1", &v)
	fmt.Println(nri.Name, v.A, err)
}
`,
	"nri/go.mod": "module github.com/containerd/nri\n\ngo 1.26\n",
	"nri/nri.go": "// Package nri stands in for compat/nri.\npackage nri\n\n// Name is its name.\nconst Name = \"fake nri\"\n",
}

// TestSBOMOfAGoBuild describes a binary the go command built (the fakes
// of the other tests carry build info written by fakeExecutable): its
// modules as the toolchain records them.
func TestSBOMOfAGoBuild(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, goBuiltMain)
	var sums []string
	for line := range strings.SplitSeq(string(readFile(t, filepath.Join("..", "go.sum"))), "\n") {
		if strings.HasPrefix(line, "github.com/BurntSushi/toml v1.6.0") {
			sums = append(sums, line)
		}
	}
	writeTree(t, src, map[string]string{"go.sum": strings.Join(sums, "\n") + "\n"})
	exe := filepath.Join(t.TempDir(), "nrinetd")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", exe, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	entries := []entry{{hdr: &tar.Header{Name: "bin/nrinetd"}, data: readFile(t, exe)}}
	bom, err := buildSBOM(sbomInput{p: productNamed("nrinet"), version: "v0.1.0", goarch: runtime.GOARCH,
		mtime: testMtime, tarball: "nrinet.tar.gz", sum: strings.Repeat("0", 64), entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range *bom.Components {
		got[c.PackageURL] = c.Version
	}
	for purl, version := range map[string]string{
		"pkg:golang/github.com/nrinet/nrinet/fakecmd@v0.1.0":               "v0.1.0",
		"pkg:golang/github.com/BurntSushi/toml@v1.6.0":                     "v1.6.0",
		"pkg:golang/github.com/nrinet/nrinet@v0.1.0#compat/nri":            "v0.1.0",
		"pkg:golang/stdlib@" + strings.TrimPrefix(runtime.Version(), "go"): runtime.Version(),
	} {
		if got[purl] != version {
			t.Errorf("%s: version %q, want %s; components %v", purl, got[purl], version, got)
		}
	}
}
