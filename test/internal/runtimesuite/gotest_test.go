package runtimesuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The helpers that read `go test -json` and judge a run against the
// baseline, checked on recorded output (these run in make test).

func TestParseRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  *Run
	}{{
		name: "tests, subtests, a skip with its reason",
		input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA/one","Output":"=== RUN   TestA/one\n"}
{"Action":"pass","Package":"p","Test":"TestA/one"}
{"Action":"output","Package":"p","Test":"TestA/two","Output":"    a_test.go:536: requires cgroups v2\n"}
{"Action":"output","Package":"p","Test":"TestA/two","Output":"--- SKIP: TestA/two (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA/two"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:29: selinux is not enabled\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:7: got 1, want 2\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`,
		want: &Run{
			Tests: map[string]Result{
				"TestA": {Outcome: OutcomePass},
				"TestB": {Outcome: OutcomeSkip, Why: "b_test.go:29: selinux is not enabled"},
				"TestC": {Outcome: OutcomeFail, Why: "c_test.go:7: got 1, want 2"},
			},
			Subtests:      map[string]int{OutcomePass: 1, OutcomeSkip: 1},
			Package:       OutcomeFail,
			PackageOutput: "FAIL\n",
		},
	}, {
		name: "build failure",
		input: `{"ImportPath":"p [p.test]","Action":"build-output","Output":"./x.go:2:12: undefined: f\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}
`,
		want: &Run{
			Tests:         map[string]Result{},
			Subtests:      map[string]int{},
			Package:       OutcomeFail,
			PackageOutput: "./x.go:2:12: undefined: f\nFAIL\tp [build failed]\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRun(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Run{}, "Output")); diff != "" {
				t.Errorf("ParseRun (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("not json", func(t *testing.T) {
		if _, err := ParseRun(strings.NewReader("ok  \tp\t0.1s\n")); err == nil {
			t.Error("ParseRun of plain go test output succeeded")
		}
	})
}

func TestCompare(t *testing.T) {
	pass, skip, fail := Result{Outcome: OutcomePass}, Result{Outcome: OutcomeSkip, Why: "needs v2"}, Result{Outcome: OutcomeFail, Why: "boom"}
	for _, tc := range []struct {
		name      string
		base, got map[string]Result
		added     map[string]bool
		want      []Difference
	}{{
		name: "same outcomes",
		base: map[string]Result{"TestA": pass, "TestB": skip, "TestC": fail},
		got:  map[string]Result{"TestA": pass, "TestB": skip, "TestC": fail},
	}, {
		name: "a pass that fails",
		base: map[string]Result{"TestA": pass},
		got:  map[string]Result{"TestA": fail},
		want: []Difference{{Test: "TestA", Msg: "fail (boom); the baseline has pass"}},
	}, {
		name: "a pass that skips",
		base: map[string]Result{"TestA": pass},
		got:  map[string]Result{"TestA": skip},
		want: []Difference{{Test: "TestA", Msg: "skip (needs v2); the baseline has pass"}},
	}, {
		name: "a skip or a failure that passes",
		base: map[string]Result{"TestB": skip, "TestC": fail},
		got:  map[string]Result{"TestB": pass, "TestC": pass},
		want: []Difference{
			{Test: "TestB", Allowed: true, Msg: "passes; the baseline has skip (needs v2)"},
			{Test: "TestC", Allowed: true, Msg: "passes; the baseline has fail (boom)"},
		},
	}, {
		name: "tests missing and added",
		base: map[string]Result{"TestA": pass, "TestB": pass},
		got:  map[string]Result{"TestB": pass, "TestNew": pass},
		want: []Difference{
			{Test: "TestA", Msg: "did not run; the baseline has pass"},
			{Test: "TestNew", Msg: "pass, but it is not in the baseline"},
		},
	}, {
		name:  "tests the patches add",
		got:   map[string]Result{"TestPatched": pass, "TestPatchedFails": fail},
		added: map[string]bool{"TestPatched": true, "TestPatchedFails": true},
		want: []Difference{
			{Test: "TestPatched", Allowed: true, Msg: "passes; added by nrinet's containerd patches"},
			{Test: "TestPatchedFails", Msg: "fail (boom); added by nrinet's containerd patches, it must pass"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare("containerd", tc.base, tc.got, tc.added)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("compare (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadGinkgoReport(t *testing.T) {
	report := `[{"SuiteDescription":"Server","SpecReports":[
{"ContainerHierarchyTexts":null,"LeafNodeType":"BeforeSuite","LeafNodeText":"","State":"passed"},
{"ContainerHierarchyTexts":["Server","UpdateContainerResources"],"LeafNodeType":"It","LeafNodeText":"should succeed","State":"passed"},
{"ContainerHierarchyTexts":["Server","UpdateContainerResources"],"LeafNodeType":"It","LeafNodeText":"should succeed","State":"failed","Failure":{"Message":"Expected\n  <int>: 1"}},
{"ContainerHierarchyTexts":["Server"],"LeafNodeType":"It","LeafNodeText":"needs SELinux","State":"skipped"}
]}]`
	file := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(file, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGinkgoReport(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{
		"ginkgo: [BeforeSuite]":                                     {Outcome: OutcomePass},
		"ginkgo: Server UpdateContainerResources should succeed":    {Outcome: OutcomePass},
		"ginkgo: Server UpdateContainerResources should succeed #2": {Outcome: OutcomeFail, Why: "failed: Expected"},
		"ginkgo: Server needs SELinux":                              {Outcome: OutcomeSkip},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadGinkgoReport (-want +got):\n%s", diff)
	}
	if _, err := ReadGinkgoReport(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("ReadGinkgoReport of a missing file succeeded")
	}
}
