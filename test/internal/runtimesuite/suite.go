package runtimesuite

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A Package is one of the runtime's packages whose tests a Suite runs.
type Package struct {
	// Path is the package's path inside the runtime's module, such as
	// internal/nri.
	Path string
	// Why says why the package is chosen.
	Why string
	// TestArgs go to the test binary (after -args).
	TestArgs []string
	// CompileOnly: the test binary is built, not run.
	CompileOnly bool
	// Ginkgo: the package has a Ginkgo suite; its specs are judged one by
	// one, from its JSON report (ReadGinkgoReport), beside the Go tests.
	Ginkgo bool
}

// A Suite runs a runtime's own unit tests, built by its build script,
// against the baseline recorded on the stock runtime.
type Suite struct {
	// Runtime names the runtime in messages ("containerd", "CRI-O").
	Runtime string
	// Script is the build script, Prefix the prefix of what it prints
	// (RunScript), NRIVar the variable that selects upstream or compat.
	Script, Prefix, NRIVar string
	// Baseline is the baseline file, Patches the directory of nrinet's
	// patches to the runtime (the tests they add are not in the baseline).
	Baseline, Patches string
	// GoMod is what adopting nrinet may change in the runtime's go.mod.
	GoMod GoModRules
	// Flags are go test's flags for every package.
	Flags []string
	// Packages are the packages whose tests run.
	Packages []Package
	// Update records the baseline from this run instead of comparing
	// (stock runtime only).
	Update bool
}

// Run builds the runtime (or finds it built) and runs the suite: a
// subtest "go.mod" for a build on nrinet (GoMod.Check of the script's
// go.mod.diff), and a subtest per package.
func (s Suite) Run(t *testing.T) {
	ctx := t.Context()
	b := RunScript(ctx, t, s.Script, s.Prefix)
	t.Logf("%s %s, nri %s, source %s", s.Runtime, b.Version, b.NRI, b.Src)
	if s.Update && b.NRI != "upstream" {
		t.Fatalf("-update records stock %s's outcomes: run it with %s=upstream, not %s", s.Runtime, s.NRIVar, b.NRI)
	}
	var base *Baseline
	if !s.Update {
		var err error
		if base, err = ReadBaseline(s.Baseline, b.Version); err != nil {
			t.Fatal(err)
		}
	}
	added := map[string]bool{}
	if b.NRI == "compat" {
		t.Run("go.mod", func(t *testing.T) {
			diff, err := os.ReadFile(filepath.Join(filepath.Dir(b.Src), "go.mod.diff"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range s.GoMod.Check(string(diff)) {
				t.Errorf("%s's go.mod with nrinet: %s", s.Runtime, p)
			}
		})
		var err error
		if added, err = AddedTests(s.Patches); err != nil {
			t.Fatal(err)
		}
	}
	recorded := map[string]map[string]Result{}
	for _, p := range s.Packages {
		t.Run(p.Path, func(t *testing.T) {
			t.Logf("%s: %s", p.Path, p.Why)
			if p.CompileOnly {
				Compile(ctx, t, b.Src, "./"+p.Path, s.Flags)
				return
			}
			args, report := p.TestArgs, ""
			if p.Ginkgo {
				report = filepath.Join(t.TempDir(), "ginkgo.json")
				args = append(slices.Clone(args), "-ginkgo.json-report="+report, "-ginkgo.no-color")
			}
			r := GoTest(ctx, t, b.Src, "./"+p.Path, s.Flags, args)
			if p.Ginkgo {
				specs, err := ReadGinkgoReport(report)
				if err != nil {
					t.Fatalf("the Ginkgo suite's report: %v\n%s", err, r.PackageOutput)
				}
				maps.Copy(r.Tests, specs)
			}
			recorded[p.Path] = r.Tests
			t.Logf("%s", Summary(r))
			if s.Update {
				if r.Package != OutcomePass {
					t.Logf("package %s: %s\n%s", p.Path, r.Package, r.PackageOutput)
				}
				return
			}
			if r.Package == "" || len(r.Tests) == 0 {
				t.Fatalf("go test %s reported no tests (package %q):\n%s", p.Path, r.Package, r.PackageOutput)
			}
			for _, d := range Compare(s.Runtime, base.Packages[p.Path], r.Tests, added) {
				if d.Allowed {
					t.Logf("%s %s", d.Test, d.Msg)
					continue
				}
				t.Errorf("%s %s\n%s", d.Test, d.Msg, r.Output[d.Test])
			}
		})
	}
	if s.Update && !t.Failed() {
		WriteBaseline(t, s.Baseline, "stock "+s.Runtime+" ("+s.NRIVar+"=upstream)", b, recorded)
	}
}
