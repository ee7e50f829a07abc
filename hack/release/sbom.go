package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// sbomSuffix names a tarball's SBOM: <base>.cdx.json, CycloneDX's JSON.
const sbomSuffix = ".cdx.json"

// sbomSpec is the CycloneDX version the SBOMs are written in.
const sbomSpec = cdx.SpecVersion1_6

// nrinetModule is nrinet's root module; its nested modules' paths start
// with it.
const nrinetModule = "github.com/nrinet/nrinet"

// The main modules of the runtimes' binaries, built from their release
// source (a copy, so the build info says "(devel)") with nrinet's patches.
var runtimeModules = map[string]struct{ version, patches string }{
	"github.com/containerd/containerd/v2": {containerdVersion, "hack/containerd-patches"},
	"github.com/cri-o/cri-o":              {crioVersion, "hack/crio-patches"},
}

// localModules are the modules nrinet replaces with a directory of its
// own in the runtimes' builds, by path: the directory, relative to the
// repository.
var localModules = map[string]string{
	"github.com/containerd/nri": "compat/nri",
}

// goModule is a module as a binary links it.
type goModule struct {
	path, version string
	sum           string // go.sum's h1: hash, if the build info has it
	purl          string
	replaces      string // path@version of the requirement it replaced, if any
}

// linkedModule says which module m of a binary's build info is, for a
// binary of nrinet's release version: a replacement by another module
// is that module; nrinet's own modules, whether from the workspace
// ("(devel)") or replaced by their directories, are at the release's
// version, and so is compat/nri where it replaces github.com/containerd/nri.
func linkedModule(m *debug.Module, version string) (goModule, error) {
	if r := m.Replace; r != nil {
		if r.Version != "" && r.Version != "(devel)" {
			return goModule{path: r.Path, version: r.Version, sum: r.Sum, purl: purl(r.Path, r.Version, ""),
				replaces: m.Path + "@" + m.Version}, nil
		}
		mod, err := nrinetLocal(m.Path, version)
		if err != nil {
			return goModule{}, fmt.Errorf("%s replaced by the directory %s: %w", m.Path, r.Path, err)
		}
		mod.replaces = m.Path + "@" + m.Version
		return mod, nil
	}
	if m.Version == "" || m.Version == "(devel)" {
		return nrinetLocal(m.Path, version)
	}
	return goModule{path: m.Path, version: m.Version, sum: m.Sum, purl: purl(m.Path, m.Version, "")}, nil
}

// nrinetLocal is the module at path built from nrinet's repository at
// version: one of nrinet's modules, or one of localModules.
func nrinetLocal(path, version string) (goModule, error) {
	if path == nrinetModule || strings.HasPrefix(path, nrinetModule+"/") {
		return goModule{path: path, version: version, purl: purl(path, version, "")}, nil
	}
	if dir, ok := localModules[path]; ok {
		return goModule{path: path, version: version, purl: purl(nrinetModule, version, dir)}, nil
	}
	return goModule{}, fmt.Errorf("module %s has no version and is not one of nrinet's", path)
}

// mainModule is a binary's main module: a runtime's at its release, with
// the patch series it is built with, or one of nrinet's.
func mainModule(m debug.Module, version string) (mod goModule, patches string, err error) {
	if rt, ok := runtimeModules[m.Path]; ok {
		return goModule{path: m.Path, version: rt.version, purl: purl(m.Path, rt.version, "")}, rt.patches, nil
	}
	if m.Version != "" && m.Version != "(devel)" {
		return goModule{path: m.Path, version: m.Version, sum: m.Sum, purl: purl(m.Path, m.Version, "")}, "", nil
	}
	mod, err = nrinetLocal(m.Path, version)
	return mod, "", err
}

// purl is the package URL of a Go module (purl-spec's golang type): the
// module path as it is, the version percent-encoded (a "+" too), and the
// subpath of a package of it, if any.
func purl(path, version, subpath string) string {
	var b strings.Builder
	b.WriteString("pkg:golang/")
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(seg))
	}
	b.WriteString("@" + strings.ReplaceAll(url.PathEscape(version), "+", "%2B"))
	if subpath != "" {
		b.WriteString("#" + subpath)
	}
	return b.String()
}

// stdlibComponent is the Go standard library a binary links, named as
// scanners of Go binaries name it.
func stdlibComponent(goVersion string) cdx.Component {
	p := "pkg:golang/stdlib@" + strings.TrimPrefix(goVersion, "go")
	return cdx.Component{BOMRef: p, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: goVersion, PackageURL: p}
}

// sbomInput is what an SBOM describes: a tarball of p for version and
// goarch, with its entries as read back from it.
type sbomInput struct {
	p               product
	version, goarch string
	mtime           time.Time
	tarball, sum    string // the tarball's name and SHA-256
	entries         []entry
}

// buildSBOM describes a tarball in CycloneDX: the product (the tarball,
// with its hash) as the BOM's component; each file as a component named
// by its path, with its SHA-256, each binary an application; and the Go
// modules each binary is built from, with their versions, from the build
// info the Go linker writes into it (debug/buildinfo): its main module
// (the binary's purl), the standard library, and every module it links,
// each a library its binary depends on. The same input gives the same
// bytes: no clock, and the serial number derived from the tarball's hash.
func buildSBOM(in sbomInput) (*cdx.BOM, error) {
	product := cdx.Component{
		BOMRef:      in.tarball,
		Type:        cdx.ComponentTypeApplication,
		Name:        in.p.pkg.name,
		Version:     in.version,
		Description: in.p.pkg.summary,
		Hashes:      &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: in.sum}},
		Licenses:    &cdx.Licenses{{License: &cdx.License{ID: license}}},
		Properties: &[]cdx.Property{
			{Name: "nrinet:archive", Value: in.tarball},
			{Name: "nrinet:platform", Value: "linux/" + in.goarch},
			{Name: "nrinet:prefix", Value: prefix},
		},
		ExternalReferences: &[]cdx.ExternalReference{{Type: cdx.ERTypeWebsite, URL: homepage}},
	}
	var components []cdx.Component
	modules := map[string]cdx.Component{} // by bom-ref, shared between binaries
	var deps []cdx.Dependency
	var fileRefs []string
	for _, e := range in.entries {
		sum := sha256.Sum256(e.data)
		c := cdx.Component{
			BOMRef: e.hdr.Name,
			Type:   cdx.ComponentTypeFile,
			Name:   e.hdr.Name,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		}
		fileRefs = append(fileRefs, c.BOMRef)
		if !isELF(e.data) {
			components = append(components, c)
			continue
		}
		if src := cSource(in.p, e.hdr.Name); src != "" {
			// A C program: its source, and the C library it is linked
			// with statically, the build machine's.
			c.Type, c.Version, c.PackageURL = cdx.ComponentTypeApplication, versionOf(src), src
			c.Properties = &[]cdx.Property{{Name: "nrinet:language", Value: "C"}, {Name: "nrinet:linked", Value: "static, with the build machine's C library"}}
			components = append(components, c)
			continue
		}
		info, err := buildinfo.Read(bytes.NewReader(e.data))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: no Go build info: %w", in.tarball, e.hdr.Name, err)
		}
		main, patches, err := mainModule(info.Main, in.version)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: main module: %w", in.tarball, e.hdr.Name, err)
		}
		c.Type, c.Version, c.PackageURL = cdx.ComponentTypeApplication, main.version, main.purl
		props := []cdx.Property{{Name: "golang:main", Value: main.path}, {Name: "golang:goversion", Value: info.GoVersion}}
		for _, s := range info.Settings {
			props = append(props, cdx.Property{Name: "golang:build:" + s.Key, Value: s.Value})
		}
		c.Properties = &props
		if patches != "" {
			c.Pedigree = &cdx.Pedigree{Notes: "built from " + main.path + " " + main.version + " with nrinet's patch series " + patches + " of " + nrinetModule + " " + in.version}
		}
		components = append(components, c)

		std := stdlibComponent(info.GoVersion)
		modules[std.BOMRef] = std
		dependsOn := []string{std.BOMRef}
		for _, m := range info.Deps {
			mod, err := linkedModule(m, in.version)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", in.tarball, e.hdr.Name, err)
			}
			mc := cdx.Component{BOMRef: mod.purl, Type: cdx.ComponentTypeLibrary, Name: mod.path, Version: mod.version, PackageURL: mod.purl}
			var mp []cdx.Property
			if mod.sum != "" {
				mp = append(mp, cdx.Property{Name: "golang:sum", Value: mod.sum})
			}
			if mod.replaces != "" {
				mp = append(mp, cdx.Property{Name: "golang:replaces", Value: mod.replaces})
			}
			if len(mp) > 0 {
				mc.Properties = &mp
			}
			modules[mc.BOMRef] = mc
			if !slices.Contains(dependsOn, mc.BOMRef) {
				dependsOn = append(dependsOn, mc.BOMRef)
			}
		}
		slices.Sort(dependsOn)
		deps = append(deps, cdx.Dependency{Ref: c.BOMRef, Dependencies: &dependsOn})
	}
	refs := slices.Sorted(func(yield func(string) bool) {
		for r := range modules {
			if !yield(r) {
				return
			}
		}
	})
	for _, r := range refs {
		components = append(components, modules[r])
		deps = append(deps, cdx.Dependency{Ref: r})
	}
	deps = append([]cdx.Dependency{{Ref: product.BOMRef, Dependencies: &fileRefs}}, deps...)

	bom := cdx.NewBOM()
	bom.SerialNumber = serialNumber(in.tarball, in.sum)
	bom.Metadata = &cdx.Metadata{
		Timestamp: in.mtime.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Group: nrinetModule, Name: "hack/release", Version: in.version,
		}}},
		Component: &product,
	}
	bom.Components = &components
	bom.Dependencies = &deps
	return bom, nil
}

// serialNumber is a BOM's serial number, a UUID (version 5 style: a hash
// of its name, here the tarball's name and SHA-256), so that the same
// tarball gets the same one and another tarball another.
func serialNumber(name, sum string) string {
	h := sha256.Sum256([]byte(name + "\n" + sum))
	u := h[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// cSource is the source of p's file name if it is a C program, else "".
func cSource(p product, name string) string {
	for _, f := range p.files {
		if f.name == name {
			return f.cSource
		}
	}
	return ""
}

// versionOf is the version in a package URL: between "@" and "#", if any.
func versionOf(purl string) string {
	_, v, _ := strings.Cut(purl, "@")
	v, _, _ = strings.Cut(v, "#")
	return v
}

// isELF says whether data starts as an ELF file does.
func isELF(data []byte) bool {
	return bytes.HasPrefix(data, []byte("\x7fELF"))
}

// writeSBOM writes in's SBOM to path, as indented CycloneDX JSON.
func writeSBOM(path string, in sbomInput) error {
	bom, err := buildSBOM(in)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, sbomSpec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// readSBOM decodes a CycloneDX JSON file.
func readSBOM(path string) (*cdx.BOM, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &bom, nil
}

// checkSBOMFile checks the SBOM of p's tarball for version and goarch
// against the tarball's entries and SHA-256 (sum): it is CycloneDX of
// sbomSpec; its component is the product, with the tarball's hash; every
// file is a component with its SHA-256, and nothing else is but Go
// modules; every binary is an application whose purl and version are its
// main module's, and depends on exactly the standard library and the
// modules its build info lists, each a component at the version it links.
func checkSBOMFile(file string, p product, version, goarch string, entries []entry, sum string) error {
	bom, err := readSBOM(file)
	if err != nil {
		return err
	}
	what := filepath.Base(file)
	found := findings{what: what}
	fail := found.add
	if bom.BOMFormat != cdx.BOMFormat || bom.SpecVersion != sbomSpec {
		fail("%s %s, want %s %s", bom.BOMFormat, bom.SpecVersion, cdx.BOMFormat, sbomSpec)
	}
	tarball := tarballName(p, version, goarch)
	if m := bom.Metadata; m == nil || m.Component == nil || m.Component.BOMRef != tarball || m.Component.Name != p.pkg.name ||
		m.Component.Version != version || hashOf(*m.Component) != sum {
		fail("its component is not %s %s, the tarball %s with SHA-256 %s", p.pkg.name, version, tarball, sum)
	}
	byRef := map[string]cdx.Component{}
	if bom.Components != nil {
		for _, c := range *bom.Components {
			if _, dup := byRef[c.BOMRef]; dup {
				fail("component %s twice", c.BOMRef)
			}
			byRef[c.BOMRef] = c
		}
	}
	dependsOn := map[string][]string{}
	if bom.Dependencies != nil {
		for _, d := range *bom.Dependencies {
			if d.Dependencies != nil {
				dependsOn[d.Ref] = *d.Dependencies
			}
		}
	}
	wantRefs := map[string]bool{}
	for _, e := range entries {
		name := e.hdr.Name
		wantRefs[name] = true
		c, ok := byRef[name]
		s := sha256.Sum256(e.data)
		if !ok || hashOf(c) != hex.EncodeToString(s[:]) {
			fail("%s: no component with its SHA-256", name)
			continue
		}
		if !isELF(e.data) {
			continue
		}
		if src := cSource(p, name); src != "" {
			if c.Type != cdx.ComponentTypeApplication || c.PackageURL != src {
				fail("%s: %s %s, want an application %s (its source)", name, c.Type, c.PackageURL, src)
			}
			continue
		}
		info, err := buildinfo.Read(bytes.NewReader(e.data))
		if err != nil {
			fail("%s: %v", name, err)
			continue
		}
		main, _, err := mainModule(info.Main, version)
		if err != nil {
			fail("%s: %v", name, err)
			continue
		}
		if c.Type != cdx.ComponentTypeApplication || c.PackageURL != main.purl || c.Version != main.version {
			fail("%s: %s %s %s, want an application %s %s (its main module)", name, c.Type, c.PackageURL, c.Version, main.purl, main.version)
		}
		want := []string{stdlibComponent(info.GoVersion).BOMRef}
		wantRefs[want[0]] = true
		for _, m := range info.Deps {
			mod, err := linkedModule(m, version)
			if err != nil {
				fail("%s: %v", name, err)
				continue
			}
			want = append(want, mod.purl)
			wantRefs[mod.purl] = true
			if mc, ok := byRef[mod.purl]; !ok || mc.Name != mod.path || mc.Version != mod.version {
				fail("%s links %s %s: not a component at that version", name, mod.path, mod.version)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if got := dependsOn[name]; !slices.Equal(got, want) {
			fail("%s depends on %d components, want the %d modules its build info lists", name, len(got), len(want))
		}
	}
	for ref := range byRef {
		if !wantRefs[ref] {
			fail("component %s: neither a file of the tarball nor a module of its binaries", ref)
		}
	}
	return found.err()
}

// hashOf returns a component's SHA-256, if it has one.
func hashOf(c cdx.Component) string {
	if c.Hashes != nil {
		for _, h := range *c.Hashes {
			if h.Algorithm == cdx.HashAlgoSHA256 {
				return h.Value
			}
		}
	}
	return ""
}
