package main

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"go/format"
	"go/types"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/containerd/nri/internal/apisurface"
)

// nrinetAPI is the package the identifiers come from.
const nrinetAPI = "github.com/nrinet/nrinet/api"

// generatedFile is the name of the file apigen writes.
const generatedFile = "aliases_generated.go"

func main() {
	dir := flag.String("dir", ".", "directory of compat pkg/api")
	flag.Parse()
	if apisurface.UpstreamDir("pkg/api") == "" {
		download := exec.Command("go", "mod", "download", "github.com/containerd/nri@"+apisurface.UpstreamVersion)
		download.Dir, download.Stderr = os.TempDir(), os.Stderr
		if err := download.Run(); err != nil {
			log.Fatalf("apigen: downloading containerd/nri %s: %v", apisurface.UpstreamVersion, err)
		}
	}
	src, err := generate(*dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*dir, generatedFile), src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// generate returns the content of aliases_generated.go for the compat
// pkg/api in dir.
func generate(dir string) ([]byte, error) {
	upDir := apisurface.UpstreamDir("pkg/api")
	if upDir == "" {
		return nil, fmt.Errorf("apigen: containerd/nri %s is not in the module cache", apisurface.UpstreamVersion)
	}
	upstream, err := apisurface.Parse(upDir, nil)
	if err != nil {
		return nil, fmt.Errorf("apigen: upstream pkg/api: %w", err)
	}
	handwritten, err := apisurface.Parse(dir, func(file string) bool { return file == generatedFile })
	if err != nil {
		return nil, fmt.Errorf("apigen: %s: %w", dir, err)
	}
	pkgs, err := apisurface.Load(dir, nrinetAPI)
	if err != nil {
		return nil, err
	}
	scope := pkgs[nrinetAPI].Scope()

	g := &gen{imports: map[string]string{nrinetAPI: "nrinet"}, aliased: map[string]bool{}}
	byKind := map[apisurface.Kind][]types.Object{}
	for _, name := range apisurface.Names(upstream, apisurface.Type, apisurface.Func, apisurface.Var, apisurface.Const) {
		if _, ok := handwritten[name]; ok {
			continue
		}
		obj := scope.Lookup(name)
		if obj == nil {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			byKind[apisurface.Type] = append(byKind[apisurface.Type], obj)
		case *types.Const:
			byKind[apisurface.Const] = append(byKind[apisurface.Const], obj)
		case *types.Var:
			byKind[apisurface.Var] = append(byKind[apisurface.Var], obj)
		case *types.Func:
			byKind[apisurface.Func] = append(byKind[apisurface.Func], obj)
		}
	}
	for _, t := range byKind[apisurface.Type] {
		g.aliased[t.Name()] = true
	}
	g.block("type", "is nrinet's", byKind[apisurface.Type])
	g.block("const", "is nrinet's", byKind[apisurface.Const])
	g.block("var", "is nrinet's", byKind[apisurface.Var])
	for _, f := range byKind[apisurface.Func] {
		if err := g.wrapper(f.(*types.Func)); err != nil {
			return nil, err
		}
	}
	return g.source()
}

// gen accumulates the declarations of the generated file.
type gen struct {
	body    bytes.Buffer
	imports map[string]string // import path -> name used
	aliased map[string]bool   // nrinet types aliased under the same name
}

// nrinetRef matches a reference to an exported name of nrinet's api.
var nrinetRef = regexp.MustCompile(`\bnrinet\.([A-Z]\w*)`)

// typeString renders t for the generated file, naming nrinet's types by
// their aliases where this file declares one (the types are identical).
func (g *gen) typeString(t types.Type) string {
	return nrinetRef.ReplaceAllStringFunc(types.TypeString(t, g.qualifier), func(ref string) string {
		if name := strings.TrimPrefix(ref, "nrinet."); g.aliased[name] {
			return name
		}
		return ref
	})
}

// block writes one declaration per object, "name = nrinet.name".
func (g *gen) block(keyword, what string, objs []types.Object) {
	if len(objs) == 0 {
		return
	}
	fmt.Fprintf(&g.body, "\n%s (\n", keyword)
	for _, obj := range objs {
		fmt.Fprintf(&g.body, "\t// %s %s [nrinet.%s].\n\t%s = nrinet.%s\n", obj.Name(), what, obj.Name(), obj.Name(), obj.Name())
	}
	g.body.WriteString(")\n")
}

// qualifier names packages in generated code and records their imports.
func (g *gen) qualifier(p *types.Package) string {
	if name, ok := g.imports[p.Path()]; ok {
		return name
	}
	g.imports[p.Path()] = p.Name()
	return p.Name()
}

// wrapper writes a function with f's signature that calls f.
func (g *gen) wrapper(f *types.Func) error {
	sig := f.Type().(*types.Signature)
	if sig.TypeParams().Len() > 0 {
		return fmt.Errorf("apigen: %s is generic; write its wrapper by hand", f.Name())
	}
	var params, args []string
	for i := range sig.Params().Len() {
		p := sig.Params().At(i)
		name := p.Name()
		if name == "" || name == "_" {
			name = fmt.Sprintf("arg%d", i)
		}
		t, arg := g.typeString(p.Type()), name
		if sig.Variadic() && i == sig.Params().Len()-1 {
			t, arg = "..."+g.typeString(p.Type().(*types.Slice).Elem()), name+"..."
		}
		params = append(params, name+" "+t)
		args = append(args, arg)
	}
	var results []string
	for i := range sig.Results().Len() {
		results = append(results, g.typeString(sig.Results().At(i).Type()))
	}
	res := strings.Join(results, ", ")
	if len(results) > 1 {
		res = "(" + res + ")"
	}
	call := fmt.Sprintf("nrinet.%s(%s)", f.Name(), strings.Join(args, ", "))
	if len(results) > 0 {
		call = "return " + call
	}
	fmt.Fprintf(&g.body, "\n// %s calls [nrinet.%s].\nfunc %s(%s) %s {\n\t%s\n}\n",
		f.Name(), f.Name(), f.Name(), strings.Join(params, ", "), res, call)
	return nil
}

// source assembles and formats the file.
func (g *gen) source() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/apigen; DO NOT EDIT.\n\npackage api\n\nimport (\n")
	paths := slices.SortedFunc(maps.Keys(g.imports), func(a, b string) int { return cmp.Compare(a, b) })
	for _, path := range paths {
		if name := g.imports[path]; name != filepath.Base(path) {
			fmt.Fprintf(&b, "\t%s %q\n", name, path)
		} else {
			fmt.Fprintf(&b, "\t%q\n", path)
		}
	}
	b.WriteString(")\n")
	b.Write(g.body.Bytes())
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("apigen: formatting the result: %w\n%s", err, b.Bytes())
	}
	return src, nil
}
