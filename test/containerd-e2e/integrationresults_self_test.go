package containerde2e

import (
	"reflect"
	"slices"
	"testing"
)

// The parser and the comparison of TestContainerdIntegration, checked
// without root or containerd.

// sampleOutput is -test.v output as containerd's integration test binary
// prints it: plugin logs, testify's error blocks, a subtest.
const sampleOutput = `=== RUN   TestNriPluginSetup
    nri_test.go:85: Test that NRI plugins can connect and get set up.
time="2026-12-01T23:48:38Z" level=info msg="Created plugin 00-mock-plugin"
--- PASS: TestNriPluginSetup (0.02s)
=== RUN   TestNriLinuxMemsetAdjustment
    nri_test.go:356: not enough online memory nodes for test
--- SKIP: TestNriLinuxMemsetAdjustment (0.00s)
=== RUN   TestNriMountInjection
    nri_test.go:152: Test that NRI plugins can inject mounts into containers.
    nri_test.go:184: 
        	Error Trace:	github.com/containerd/containerd/v2/integration/nri_test.go:184
        	Error:      	Received unexpected error:
        	            	waiting for /tmp/x/result timed out
        	Test:       	TestNriMountInjection
        	Messages:   	read result
--- FAIL: TestNriMountInjection (2.29s)
=== RUN   TestWithSub
=== RUN   TestWithSub/a
    --- PASS: TestWithSub/a (0.10s)
--- PASS: TestWithSub (0.10s)
=== RUN   TestCrashed
panic: runtime error: invalid memory address or nil pointer dereference
`

func TestParseTestOutput(t *testing.T) {
	got := parseTestOutput(sampleOutput)
	want := map[string]testResult{
		"TestNriPluginSetup":           {Outcome: outcomePass, Seconds: 0.02},
		"TestNriLinuxMemsetAdjustment": {Outcome: outcomeSkip, Detail: "not enough online memory nodes for test"},
		"TestNriMountInjection":        {Outcome: outcomeFail, Seconds: 2.29, Detail: "Error: Received unexpected error:; Messages: read result"},
		"TestWithSub":                  {Outcome: outcomePass, Seconds: 0.1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTestOutput:\n got %+v\nwant %+v", got, want)
	}
}

func TestCompareOutcomes(t *testing.T) {
	pass, fail, skip := testResult{Outcome: outcomePass}, testResult{Outcome: outcomeFail}, testResult{Outcome: outcomeSkip}
	for _, tc := range []struct {
		name            string
		want, got       map[string]testResult
		problems, notes int
	}{
		{"same", map[string]testResult{"A": pass, "B": skip}, map[string]testResult{"A": pass, "B": skip}, 0, 0},
		{"pass then fail", map[string]testResult{"A": pass}, map[string]testResult{"A": fail}, 1, 0},
		{"pass then skip", map[string]testResult{"A": pass}, map[string]testResult{"A": skip}, 1, 0},
		{"skip then pass", map[string]testResult{"A": skip}, map[string]testResult{"A": pass}, 0, 1},
		{"skip then fail", map[string]testResult{"A": skip}, map[string]testResult{"A": fail}, 1, 0},
		{"fail then pass", map[string]testResult{"A": fail}, map[string]testResult{"A": pass}, 0, 1},
		{"fail then fail", map[string]testResult{"A": fail}, map[string]testResult{"A": fail}, 0, 0},
		{"missing in run", map[string]testResult{"A": pass, "B": pass}, map[string]testResult{"A": pass}, 1, 0},
		{"missing in baseline", map[string]testResult{"A": pass}, map[string]testResult{"A": pass, "B": pass}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, notes := compareOutcomes("stock", tc.want, "nrinet", tc.got)
			if len(problems) != tc.problems || len(notes) != tc.notes {
				t.Errorf("problems %q, notes %q; want %d and %d", problems, notes, tc.problems, tc.notes)
			}
		})
	}
}

func TestRunPattern(t *testing.T) {
	if got, want := runPattern([]string{"TestA", "TestB"}), "^(TestA|TestB)$"; got != want {
		t.Errorf("runPattern = %q, want %q", got, want)
	}
}

func TestLoggedIDs(t *testing.T) {
	const id1 = "90c607dab389350729242b5b5555ef689a975e9062131d9fcbbfd7d5247e3559"
	const id2 = "ee8d917154c1d9050148f0a536bf0d308230a1d7b02b32322fad5675d4a72f8a"
	log := `msg="RunPodSandbox returns sandbox id \"` + id1 + `\""` + "\n" +
		`msg="CreateContainer within sandbox \"` + id1 + `\" returns container id \"` + id2 + `\""` + "\n" +
		`msg="not an ID: ` + id1 + `0"`
	if got := loggedIDs(log); !slices.Equal(got, []string{id1, id2}) {
		t.Errorf("loggedIDs = %v, want [%s %s]", got, id1, id2)
	}
}
