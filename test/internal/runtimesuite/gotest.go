package runtimesuite

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Outcomes of a test, as `go test -json` reports them.
const (
	OutcomePass = "pass"
	OutcomeSkip = "skip"
	OutcomeFail = "fail"
)

// Result is one top-level test's outcome, as the baseline records it.
type Result struct {
	// Outcome is pass, skip or fail.
	Outcome string `json:"outcome"`
	// Why is, for a skip or a failure, the test's last line of output
	// (its t.Skip or t.Error message); empty for a pass.
	Why string `json:"why,omitempty"`
}

// Run is what one `go test -json` of a package reported.
type Run struct {
	// Tests maps each top-level test that ended to its result.
	Tests map[string]Result
	// Output holds each top-level test's output, its subtests' included.
	Output map[string]string
	// Subtests counts the subtests that ended, by outcome.
	Subtests map[string]int
	// Package is the package's outcome (pass, fail, or skip when it has no
	// tests); empty if go test stopped before reporting it.
	Package string
	// PackageOutput is the output that belongs to no test: build errors,
	// panics outside tests, the final "ok"/"FAIL" line.
	PackageOutput string
}

// event is one line of `go test -json` (cmd/test2json); build events carry
// ImportPath instead of Package.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// ParseRun reads the output of `go test -json` for one package.
func ParseRun(r io.Reader) (*Run, error) {
	res := &Run{Tests: map[string]Result{}, Output: map[string]string{}, Subtests: map[string]int{}}
	out := map[string]*strings.Builder{}
	var pkgOut strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("go test -json, line %d: %w: %q", line, err, sc.Text())
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output", "build-output":
				pkgOut.WriteString(ev.Output)
			case OutcomePass, OutcomeFail, OutcomeSkip:
				res.Package = ev.Action
			}
			continue
		}
		top, _, sub := strings.Cut(ev.Test, "/")
		switch ev.Action {
		case "output":
			if out[top] == nil {
				out[top] = &strings.Builder{}
			}
			out[top].WriteString(ev.Output)
		case OutcomePass, OutcomeFail, OutcomeSkip:
			if sub {
				res.Subtests[ev.Action]++
				continue
			}
			r := Result{Outcome: ev.Action}
			if ev.Action != OutcomePass && out[top] != nil {
				r.Why = lastMessage(out[top].String())
			}
			res.Tests[top] = r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("go test -json: %w", err)
	}
	for name, b := range out {
		res.Output[name] = b.String()
	}
	res.PackageOutput = pkgOut.String()
	return res, nil
}

// lastMessage returns the last line of a test's output that the test wrote
// itself, not one of the framework's "=== RUN" or "--- SKIP" lines.
func lastMessage(output string) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		return l
	}
	return ""
}

// A Difference between a run and the baseline, for one test.
type Difference struct {
	Test string
	Msg  string
	// Allowed: not an error (a test the baseline has skipping or failing
	// now passes, or a test nrinet's patches add passes).
	Allowed bool
}

// Compare checks got against the baseline's results for one package: a test
// that passed must pass, one that skipped may skip or pass, one that failed
// (a failure of the stock runtime on this machine) may fail or pass, and the
// same tests must have run, but for those in added (tests nrinet's patches
// to the runtime add), which must pass; runtime names the runtime in the
// messages. It returns the differences, sorted by test.
func Compare(runtime string, base, got map[string]Result, added map[string]bool) []Difference {
	var diffs []Difference
	for _, name := range slices.Sorted(maps.Keys(base)) {
		want := base[name]
		r, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, Difference{Test: name, Msg: fmt.Sprintf("did not run; the baseline has %s", want.Outcome)})
		case r.Outcome == want.Outcome:
		case r.Outcome == OutcomePass:
			diffs = append(diffs, Difference{Test: name, Allowed: true,
				Msg: fmt.Sprintf("passes; the baseline has %s (%s)", want.Outcome, want.Why)})
		default:
			diffs = append(diffs, Difference{Test: name, Msg: fmt.Sprintf("%s (%s); the baseline has %s", r.Outcome, r.Why, want.Outcome)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := base[name]; ok {
			continue
		}
		r := got[name]
		switch {
		case added[name] && r.Outcome == OutcomePass:
			diffs = append(diffs, Difference{Test: name, Allowed: true, Msg: "passes; added by nrinet's " + runtime + " patches"})
		case added[name]:
			diffs = append(diffs, Difference{Test: name, Msg: fmt.Sprintf("%s (%s); added by nrinet's %s patches, it must pass", r.Outcome, r.Why, runtime)})
		default:
			diffs = append(diffs, Difference{Test: name, Msg: fmt.Sprintf("%s, but it is not in the baseline", r.Outcome)})
		}
	}
	slices.SortStableFunc(diffs, func(a, b Difference) int { return strings.Compare(a.Test, b.Test) })
	return diffs
}

// patchTestFunc matches a test function a patch adds.
var patchTestFunc = regexp.MustCompile(`(?m)^\+func (Test\w+)\(t \*testing\.T\)`)

// AddedTests returns the names of the test functions the patches in dir
// add to a runtime (hack/containerd-patches, hack/crio-patches): they are
// not in the baseline, which is the stock runtime's, and must pass.
func AddedTests(dir string) (map[string]bool, error) {
	patches, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		return nil, err
	}
	added := map[string]bool{}
	for _, p := range patches {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, m := range patchTestFunc.FindAllSubmatch(b, -1) {
			added[string(m[1])] = true
		}
	}
	return added, nil
}
