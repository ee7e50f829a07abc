package containerd_test

import (
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
		want  *run
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
		want: &run{
			Tests: map[string]result{
				"TestA": {Outcome: outcomePass},
				"TestB": {Outcome: outcomeSkip, Why: "b_test.go:29: selinux is not enabled"},
				"TestC": {Outcome: outcomeFail, Why: "c_test.go:7: got 1, want 2"},
			},
			Subtests:      map[string]int{outcomePass: 1, outcomeSkip: 1},
			Package:       outcomeFail,
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
		want: &run{
			Tests:         map[string]result{},
			Subtests:      map[string]int{},
			Package:       outcomeFail,
			PackageOutput: "./x.go:2:12: undefined: f\nFAIL\tp [build failed]\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRun(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(run{}), cmpopts.IgnoreFields(run{}, "Output")); diff != "" {
				t.Errorf("parseRun (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("not json", func(t *testing.T) {
		if _, err := parseRun(strings.NewReader("ok  \tp\t0.1s\n")); err == nil {
			t.Error("parseRun of plain go test output succeeded")
		}
	})
}

func TestCompare(t *testing.T) {
	pass, skip, fail := result{Outcome: outcomePass}, result{Outcome: outcomeSkip, Why: "needs v2"}, result{Outcome: outcomeFail, Why: "boom"}
	for _, tc := range []struct {
		name      string
		base, got map[string]result
		added     map[string]bool
		want      []difference
	}{{
		name: "same outcomes",
		base: map[string]result{"TestA": pass, "TestB": skip, "TestC": fail},
		got:  map[string]result{"TestA": pass, "TestB": skip, "TestC": fail},
	}, {
		name: "a pass that fails",
		base: map[string]result{"TestA": pass},
		got:  map[string]result{"TestA": fail},
		want: []difference{{test: "TestA", msg: "fail (boom); the baseline has pass"}},
	}, {
		name: "a pass that skips",
		base: map[string]result{"TestA": pass},
		got:  map[string]result{"TestA": skip},
		want: []difference{{test: "TestA", msg: "skip (needs v2); the baseline has pass"}},
	}, {
		name: "a skip or a failure that passes",
		base: map[string]result{"TestB": skip, "TestC": fail},
		got:  map[string]result{"TestB": pass, "TestC": pass},
		want: []difference{
			{test: "TestB", allowed: true, msg: "passes; the baseline has skip (needs v2)"},
			{test: "TestC", allowed: true, msg: "passes; the baseline has fail (boom)"},
		},
	}, {
		name: "tests missing and added",
		base: map[string]result{"TestA": pass, "TestB": pass},
		got:  map[string]result{"TestB": pass, "TestNew": pass},
		want: []difference{
			{test: "TestA", msg: "did not run; the baseline has pass"},
			{test: "TestNew", msg: "pass, but it is not in the baseline"},
		},
	}, {
		name:  "tests the patches add",
		got:   map[string]result{"TestPatched": pass, "TestPatchedFails": fail},
		added: map[string]bool{"TestPatched": true, "TestPatchedFails": true},
		want: []difference{
			{test: "TestPatched", allowed: true, msg: "passes; added by nrinet's containerd patches"},
			{test: "TestPatchedFails", msg: "fail (boom); added by nrinet's containerd patches, it must pass"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := compare(tc.base, tc.got, tc.added)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(difference{})); diff != "" {
				t.Errorf("compare (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddedTests(t *testing.T) {
	added, err := addedTests(filepath.Join("..", "..", "hack", "containerd-patches"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestValidateNetworkMode", "TestStoreUpdateNetwork", "TestNRINetworkIPs"} {
		if !added[name] {
			t.Errorf("%s, which the patches add, was not found (found %v)", name, added)
		}
	}
}
