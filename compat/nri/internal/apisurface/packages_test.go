package apisurface_test

import (
	"strings"
	"testing"

	"github.com/containerd/nri/internal/apisurface"
)

// packages lists the packages of this module compared with upstream's
// (pkg/api has its own test), each with the reasons upstream identifiers
// are left out. docs/compat.md says the same.
var packages = []struct {
	pkg     string
	leftOut func(name string) string
}{
	{
		pkg: ".",
		leftOut: func(name string) string {
			if name == "Task" {
				return apisurface.ByHand + "upstream's Task embeds an unexported interface; TestTaskMethods in the root package checks the method set"
			}
			return ""
		},
	},
	{pkg: "types/v1"},
	{pkg: "pkg/log"},
	{pkg: "pkg/net"},
	{pkg: "pkg/net/multiplex"},
	{pkg: "pkg/plugin"},
	{
		pkg: "pkg/runtime-tools/generate",
		leftOut: func(name string) string {
			if recv, method, ok := strings.Cut(name, "."); ok && recv == "Generator" && method != "Adjust" {
				return "Adjust applies a whole adjustment through nrinet's ocispec; the per-field steps are not API here"
			}
			return ""
		},
	},
	{pkg: "plugins/default-validator"},
	{pkg: "plugins/default-validator/builtin"},
	{
		pkg: "pkg/adaptation",
		leftOut: func(name string) string {
			switch name {
			case "Adaptation{Mutex}", "Adaptation.Lock", "Adaptation.Unlock", "Adaptation.TryLock":
				return "Adaptation embeds no mutex: nrinet holds no lock across plugin calls"
			}
			return ""
		},
	},
	{pkg: "pkg/stub"},
	{
		pkg: "pkg/adaptation/builtin",
		leftOut: func(name string) string {
			if recv, _, ok := strings.Cut(name, "."); ok && recv == "BuiltinPlugin" {
				return "the Plugin service methods come with pkg/adaptation, which runs built-in plugins"
			}
			return ""
		},
	},
}

func TestPackagesSurface(t *testing.T) {
	if apisurface.UpstreamDir("pkg/api") == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	paths := []string{apisurface.CompatAPI}
	for _, p := range packages {
		paths = append(paths, strings.TrimSuffix("github.com/containerd/nri/"+p.pkg, "/."))
	}
	pkgs, err := apisurface.Load(".", paths...)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range packages {
		t.Run(p.pkg, func(t *testing.T) {
			upstream, err := apisurface.Parse(apisurface.UpstreamDir(p.pkg), nil)
			if err != nil {
				t.Fatal(err)
			}
			leftOut := p.leftOut
			if leftOut == nil {
				leftOut = func(string) string { return "" }
			}
			problems, checked := apisurface.Compare(upstream, pkgs[paths[i+1]], pkgs[apisurface.CompatAPI], leftOut)
			for _, problem := range problems {
				t.Error(problem)
			}
			if checked == 0 {
				t.Errorf("nothing compared")
			}
		})
	}
}
