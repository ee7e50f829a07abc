package stub_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/internal/apisurface"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
)

// upstreamStub has the methods of upstream's Stub interface: Stub has
// exactly these.
type upstreamStub interface {
	Run(context.Context) error
	Start(context.Context) error
	Stop()
	Wait()
	UpdateContainers([]*api.ContainerUpdate) ([]*api.ContainerUpdate, error)
	RegistrationTimeout() time.Duration
	RequestTimeout() time.Duration
	Logger() nrilog.Logger
	RuntimeNRIVersion() string
	PluginNRIVersion() string
}

var (
	_ upstreamStub = stub.Stub(nil)
	_ stub.Stub    = upstreamStub(nil)
)

// TestUpstreamSurface: every exported identifier of upstream's pkg/stub
// is declared here as the same kind, functions with upstream's signature
// and interfaces with upstream's methods, spelled as upstream spells them.
func TestUpstreamSurface(t *testing.T) {
	apiDir := apisurface.UpstreamDir("pkg/api")
	if apiDir == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	upDir := filepath.Join(apiDir, "..", "stub")
	up, err := apisurface.Parse(upDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := apisurface.Parse(".", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range apisurface.Names(up, apisurface.Type, apisurface.Func, apisurface.Var, apisurface.Const, apisurface.Method) {
		u, o := up[name], ours[name]
		switch {
		case o.Name == "":
			t.Errorf("%s %s is missing", u.Kind, name)
		case o.Kind != u.Kind:
			t.Errorf("%s is a %s here, a %s upstream", name, o.Kind, u.Kind)
		case o.Sig != u.Sig:
			t.Errorf("%s: signature %s here, %s upstream", name, o.Sig, u.Sig)
		}
	}
	upMethods, ourMethods := interfaceMethods(t, upDir), interfaceMethods(t, ".")
	for name, sig := range upMethods {
		if got, ok := ourMethods[name]; !ok {
			t.Errorf("interface method %s is missing", name)
		} else if got != sig {
			t.Errorf("interface method %s: %s here, %s upstream", name, got, sig)
		}
	}
	for name := range ourMethods {
		if _, ok := upMethods[name]; !ok {
			t.Errorf("interface method %s is not upstream's", name)
		}
	}
}

// interfaceMethods returns the methods of the exported interfaces declared
// in the non-test Go files of dir, as "Interface.Method" to the method's
// type without parameter names.
func interfaceMethods(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok {
				return false
			}
			for _, m := range it.Methods.List {
				ft, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) == 0 {
					continue
				}
				for _, fl := range []*ast.FieldList{ft.Params, ft.Results} {
					if fl != nil {
						for _, p := range fl.List {
							p.Names = nil
						}
					}
				}
				var b strings.Builder
				if err := printer.Fprint(&b, fset, ft); err != nil {
					t.Fatal(err)
				}
				out[ts.Name.Name+"."+m.Names[0].Name] = strings.ReplaceAll(b.String(), "interface{}", "any")
			}
			return false
		})
	}
	return out
}
