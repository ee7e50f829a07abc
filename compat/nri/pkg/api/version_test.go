package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/containerd/nri/internal/apisurface"
	"github.com/containerd/nri/pkg/api"
)

func TestInferVersionFromRuntime(t *testing.T) {
	for _, tc := range []struct {
		runtime, version, want string
		fails                  bool
	}{
		{runtime: "containerd", version: "v1.7.0", want: "v0.3.0"},
		{runtime: "containerd", version: "v1.7.13", want: "v0.4.0"},
		{runtime: "containerd", version: "v1.7.99", want: "v0.8.0"},
		{runtime: "containerd", version: "v2.1.6", want: "v0.8.0"},
		{runtime: "containerd", version: "v2.2.0-rc.1", want: "v0.8.0"},
		{runtime: "containerd", version: "v2.2.0", want: "v0.10.0"},
		{runtime: "containerd", version: "v2.2.0-225-ge9dc15b7a", want: "v0.10.0"},
		{runtime: "containerd", version: "v2.2.0-225-ge9dc15b7a.m", want: "v0.10.0"},
		{runtime: "containerd", version: "v2.4.2", want: "v0.11.0"},
		{runtime: "containerd", version: "v2.4.2+unknown", want: "v0.11.0"},
		{runtime: "containerd", version: "v3", want: "v0.11.0"},
		{runtime: "cri-o", version: "v1.26.5", want: "v0.3.1-0.20230504231226-94185418e253"},
		{runtime: "cri-o", version: "v1.27.0", want: "v0.3.0"},
		{runtime: "cri-o", version: "v1.36.1", want: "v0.11.0"},
		{runtime: "containerd", version: "v1.6.30", fails: true},
		{runtime: "cri-o", version: "1.31.2", want: "v0.6.1"},
		{runtime: "containerd", version: "", fails: true},
		{runtime: "containerd", version: "vX.Y", fails: true},
		{runtime: "docker", version: "v27.0.0", fails: true},
	} {
		t.Run(tc.runtime+"@"+tc.version, func(t *testing.T) {
			got, err := api.InferVersionFromRuntime(tc.runtime, tc.version)
			if tc.fails {
				if err == nil || got != api.UnknownVersion {
					t.Fatalf("got %q, %v; want UnknownVersion and an error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestInferVersionFromRuntimeAsUpstream checks every release in
// upstream's table of runtime releases and their NRI versions.
func TestInferVersionFromRuntimeAsUpstream(t *testing.T) {
	dir := apisurface.UpstreamDir("pkg/api")
	if dir == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "version.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	unquote := func(e ast.Expr) string {
		s, err := strconv.Unquote(e.(*ast.BasicLit).Value)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	checked := 0
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Names[0].Name != "runtimeVersionMap" {
			return true
		}
		for _, rt := range spec.Values[0].(*ast.CompositeLit).Elts {
			rt := rt.(*ast.KeyValueExpr)
			runtime := unquote(rt.Key)
			for _, rel := range rt.Value.(*ast.CompositeLit).Elts {
				rel := rel.(*ast.KeyValueExpr)
				release, want := unquote(rel.Key), unquote(rel.Value)
				if got, err := api.InferVersionFromRuntime(runtime, release); err != nil || got != want {
					t.Errorf("%s %s: got %q, %v; upstream %q", runtime, release, got, err, want)
				}
				checked++
			}
		}
		return false
	})
	if checked < 100 {
		t.Errorf("only %d upstream releases checked", checked)
	}
}
