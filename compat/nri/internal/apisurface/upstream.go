package apisurface

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// UpstreamVersion is the containerd/nri release this module mirrors.
const UpstreamVersion = "v0.12.5"

// UpstreamDir returns the directory of package pkg (such as "pkg/api") of
// containerd/nri UpstreamVersion in the module cache, or "" if the module
// is not there. test/interop depends on it, so `make test` has it.
func UpstreamDir(pkg string) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	mod := filepath.Join(strings.TrimSpace(string(out)), "github.com/containerd/nri@"+UpstreamVersion)
	if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
		return ""
	}
	return filepath.Join(mod, pkg)
}

// Kind is the kind of a declared identifier.
type Kind string

// Kinds of declarations.
const (
	Type   Kind = "type"
	Func   Kind = "func"
	Var    Kind = "var"
	Const  Kind = "const"
	Method Kind = "method"
)

// Decl is one exported declaration of a package.
type Decl struct {
	// Name is the identifier, "Type.Method" for a method.
	Name string
	Kind Kind
	// Sig is the signature of a function or method as
	// "func(T1, T2) (R1, R2)", with the parameter names left out,
	// interface{} written any, and types of other packages qualified by
	// import path ("*github.com/containerd/nri/pkg/api.PodSandbox"), those
	// of the package itself not at all.
	Sig string
	// File is the base name of the declaring file.
	File string
	// Fields are the exported fields of a struct type (not an alias), by
	// name: the type as Sig spells types, then the tag, if any, after a
	// space. Nil for other declarations.
	Fields map[string]string
	// Methods are the methods of an interface type (not an alias), by
	// name, with signatures as Sig. Nil for other declarations.
	Methods map[string]string
}

// typeDecl describes a type declaration, with the fields of a struct and
// the methods of an interface.
func typeDecl(fset *token.FileSet, s *ast.TypeSpec) Decl {
	d := Decl{Name: s.Name.Name, Kind: Type}
	if s.Assign.IsValid() {
		return d // an alias: its target is described where it is declared
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		d.Fields = map[string]string{}
		for _, f := range t.Fields.List {
			typ := exprString(fset, f.Type)
			if f.Tag != nil {
				typ += " " + f.Tag.Value
			}
			names := f.Names
			if len(names) == 0 { // embedded: named after its type
				name := typ
				if star, ok := f.Type.(*ast.StarExpr); ok {
					name = exprString(fset, star.X)
				}
				names = []*ast.Ident{ast.NewIdent(name[strings.LastIndex(name, ".")+1:])}
			}
			for _, n := range names {
				if n.IsExported() {
					d.Fields[n.Name] = typ
				}
			}
		}
	case *ast.InterfaceType:
		d.Methods = map[string]string{}
		for _, m := range t.Methods.List {
			ft, ok := m.Type.(*ast.FuncType)
			if !ok {
				d.Methods["embedded "+exprString(fset, m.Type)] = ""
				continue
			}
			for _, n := range m.Names {
				d.Methods[n.Name] = signature(fset, ft)
			}
		}
	}
	return d
}

// exprString renders a type expression.
func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		panic(fmt.Sprintf("apisurface: printing a type: %v", err))
	}
	return strings.ReplaceAll(b.String(), "interface{}", "any")
}

// linux is the build context whose files count: upstream's files for
// WASM guests (GOOS wasip1) and other systems are left out.
var linux = func() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", true
	return c
}()

// Parse returns the exported declarations of the Go files of dir that
// build on linux/amd64 (tests and files skip selects excluded), by name.
// Methods are included, with exported receiver types only.
func Parse(dir string, skip func(file string) bool) (map[string]Decl, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	decls := map[string]Decl{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || (skip != nil && skip(name)) {
			continue
		}
		if ok, err := linux.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		qualifyByPath(f)
		for _, d := range f.Decls {
			for _, decl := range declsOf(fset, d) {
				decl.File = name
				decls[decl.Name] = decl
			}
		}
	}
	return decls, nil
}

func declsOf(fset *token.FileSet, d ast.Decl) []Decl {
	var out []Decl
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		decl := Decl{Name: d.Name.Name, Kind: Func, Sig: signature(fset, d.Type)}
		if d.Recv != nil {
			recv := d.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			id, ok := recv.(*ast.Ident)
			if !ok || !id.IsExported() {
				return nil
			}
			decl.Name, decl.Kind = id.Name+"."+d.Name.Name, Method
		}
		out = append(out, decl)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					out = append(out, typeDecl(fset, s))
				}
			case *ast.ValueSpec:
				kind := Var
				if d.Tok == token.CONST {
					kind = Const
				}
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, Decl{Name: n.Name, Kind: kind})
					}
				}
			}
		}
	}
	return out
}

// qualifyByPath rewrites the package names in the selector expressions of
// f ("rspec.Mount") into the import paths they stand for, so that types
// compare whatever name a file imports a package under.
func qualifyByPath(f *ast.File) {
	paths := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := defaultName(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		paths[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && paths[id.Name] != "" {
				id.Name = paths[id.Name]
			}
		}
		return true
	})
}

// defaultName guesses the name of the package at path, as the go tool
// would for a package declaring the conventional name: the last element,
// without a major version suffix or a "go-" prefix or "-go" suffix.
func defaultName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	name = strings.TrimPrefix(strings.TrimSuffix(name, "-go"), "go-")
	return strings.ReplaceAll(name, "-", "_")
}

// signature renders a function type without parameter names.
func signature(fset *token.FileSet, ft *ast.FuncType) string {
	list := func(fl *ast.FieldList) string {
		if fl == nil {
			return ""
		}
		var types []string
		for _, f := range fl.List {
			t := exprString(fset, f.Type)
			for range max(1, len(f.Names)) {
				types = append(types, t)
			}
		}
		return strings.Join(types, ", ")
	}
	return strings.ReplaceAll("func("+list(ft.Params)+") ("+list(ft.Results)+")", "interface{}", "any")
}

// Names returns the names of decls of the given kinds, sorted.
func Names(decls map[string]Decl, kinds ...Kind) []string {
	var names []string
	for name, d := range decls {
		if slices.Contains(kinds, d.Kind) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
