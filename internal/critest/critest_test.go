package critest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/critest"
)

// report is a Ginkgo v2 JSON report with specs out of order, a setup node
// and a spec outside the focus.
const report = `[{"SpecReports": [
 {"ContainerHierarchyTexts": ["[k8s.io] NRI", "plugin"], "LeafNodeText": "b runs second", "LeafNodeType": "It", "State": "failed",
  "RunTime": 2000000000, "StartTime": "2026-12-02T10:00:02Z", "Failure": {"Message": "boom\nstack"}},
 {"ContainerHierarchyTexts": ["[k8s.io] NRI"], "LeafNodeText": "a runs first", "LeafNodeType": "It", "State": "passed",
  "RunTime": 1000000000, "StartTime": "2026-12-02T10:00:01Z"},
 {"LeafNodeText": "", "LeafNodeType": "SynchronizedBeforeSuite", "State": "passed", "StartTime": "2026-12-02T10:00:00Z"},
 {"ContainerHierarchyTexts": ["[k8s.io] Container"], "LeafNodeText": "unfocused", "LeafNodeType": "It", "State": "passed",
  "StartTime": "2026-12-02T10:00:03Z"}
]}]`

func TestReadReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := critest.ReadReport(path, "NRI")
	if err != nil {
		t.Fatal(err)
	}
	want := []critest.Spec{
		{Name: "[k8s.io] NRI a runs first", State: "passed", RunTime: time.Second},
		{Name: "[k8s.io] NRI plugin b runs second", State: "failed", RunTime: 2 * time.Second, Message: "boom\nstack"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadReport = %+v\nwant %+v", got, want)
	}
	if s := got[1].Short(); s != ": boom" {
		t.Errorf("Short() = %q, want %q", s, ": boom")
	}
	if _, err := critest.ReadReport(path, "("); err == nil {
		t.Error("ReadReport with a bad focus succeeded")
	}
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := critest.ReadReport(path, "NRI"); err == nil {
		t.Error("ReadReport of a malformed report succeeded")
	}
}

func TestCheck(t *testing.T) {
	sync := "[k8s.io] NRI plugin synchronization " + critest.SynchronizationSpecs[0]
	ref := []critest.Spec{{Name: "a", State: "passed"}, {Name: "b", State: "failed"}, {Name: sync, State: "passed"}}
	for _, tc := range []struct {
		name      string
		res, ref  []critest.Spec
		mustPass  []string
		problems  int
		notes     int
		wantInMsg string
	}{
		{name: "as the reference", res: ref, ref: ref},
		{name: "fails what passed on stock", res: []critest.Spec{{Name: "a", State: "failed", Message: "x"}}, ref: ref, problems: 1, wantInMsg: "failed a: x"},
		{name: "fails what failed on stock", res: []critest.Spec{{Name: "b", State: "failed"}}, ref: ref},
		{name: "excused", res: []critest.Spec{{Name: "a", State: "failed", Excused: "the runtime's race"}}, ref: ref, notes: 1},
		{name: "no reference: a failure counts", res: []critest.Spec{{Name: "b", State: "failed"}}, problems: 1},
		{name: "no reference: a skip with a message does not", res: []critest.Spec{{Name: "b", State: "skipped", Message: "why"}}},
		{name: "must pass, skipped", res: []critest.Spec{{Name: sync, State: "skipped", Message: "lost"}}, mustPass: critest.SynchronizationSpecs[:1], problems: 1, wantInMsg: "must pass"},
		{name: "must pass, did not run", res: nil, mustPass: critest.SynchronizationSpecs[:1], problems: 1, wantInMsg: "did not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, notes := critest.Check(tc.res, tc.ref, tc.mustPass, "NRI")
			if len(problems) != tc.problems || len(notes) != tc.notes {
				t.Fatalf("Check = problems %q, notes %q; want %d and %d", problems, notes, tc.problems, tc.notes)
			}
			if tc.wantInMsg != "" && !strings.Contains(problems[0], tc.wantInMsg) {
				t.Errorf("problem %q does not say %q", problems[0], tc.wantInMsg)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	results := map[string][]critest.Spec{
		"stock":  {{Name: "[k8s.io] NRI a", State: "passed"}, {Name: "[k8s.io] NRI b|c", State: "failed", Excused: "race"}},
		"nrinet": {{Name: "[k8s.io] NRI a", State: "passed"}},
	}
	got := critest.Summary([]string{"stock", "nrinet", "absent"}, results, map[string]time.Duration{"stock": 61 * time.Second})
	for _, want := range []string{
		"| spec | stock | nrinet |",
		"| NRI a | passed | passed |",
		`| NRI b\|c | failed (excused) | - |`,
		"- stock: passed 1, failed 1, skipped 0 (critest and the runtime's start, 1m1s)",
		"- nrinet: passed 1, failed 0, skipped 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "absent") {
		t.Errorf("Summary shows a variant without results:\n%s", got)
	}
}
