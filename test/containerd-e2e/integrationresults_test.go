package containerde2e

import (
	"bufio"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Outcomes of a test, as go test reports them.
const (
	outcomePass = "pass"
	outcomeFail = "fail"
	outcomeSkip = "skip"
)

// testResult is one top-level test's outcome.
type testResult struct {
	Outcome string `json:"outcome"`
	// Seconds is the test's duration as go test reports it.
	Seconds float64 `json:"seconds,omitempty"`
	// Detail is a skip's reason, or a failure's first errors.
	Detail string `json:"detail,omitempty"`
}

var (
	// "--- PASS: TestX (1.23s)" at the start of a line: a top-level test
	// (a subtest's line is indented).
	testEndRE = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (Test\w+) \(([0-9.]+)s\)`)
	// "=== RUN   TestX" (a subtest's name has a slash).
	testRunRE = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(Test\w+)\s*$`)
)

// parseTestOutput reads the top-level tests' outcomes from a test binary's
// -test.v output. The tests run one after another (the NRI tests are not
// parallel), so the lines between a test's "=== RUN" and its "---" line
// are its own.
func parseTestOutput(out string) map[string]testResult {
	results := map[string]testResult{}
	var current string
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := testRunRE.FindStringSubmatch(line); m != nil {
			if m[1] != current {
				current, lines = m[1], nil
			}
			continue
		}
		if m := testEndRE.FindStringSubmatch(line); m != nil {
			secs, _ := strconv.ParseFloat(m[3], 64)
			r := testResult{Outcome: strings.ToLower(m[1]), Seconds: secs}
			if m[2] == current {
				r.Detail = detail(r.Outcome, lines)
			}
			results[m[2]] = r
			current, lines = "", nil
			continue
		}
		if current != "" {
			lines = append(lines, line)
		}
	}
	return results
}

// logLineRE is a test's log line: "    file.go:NN: message".
var logLineRE = regexp.MustCompile(`^\s+\w+\.go:\d+: ?(.*)$`)

// detail summarizes a test's output: for a skip its last log line (the
// reason t.Skip logged), for a failure testify's "Error:" and "Messages:"
// lines (else its last log line).
func detail(outcome string, lines []string) string {
	last := ""
	var errs []string
	for _, l := range lines {
		if m := logLineRE.FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) != "" {
			last = strings.TrimSpace(m[1])
		}
		t := strings.Join(strings.Fields(l), " ")
		if strings.HasPrefix(t, "Error: ") || strings.HasPrefix(t, "Messages: ") {
			errs = append(errs, t)
		}
	}
	switch {
	case outcome == outcomeFail && len(errs) > 0:
		return strings.Join(errs[:min(len(errs), 4)], "; ")
	case outcome == outcomePass:
		return ""
	}
	return last
}

// compareOutcomes checks a run's outcomes (got, of runtime name) against
// want (stock containerd's, from wantName): a test that passed there must
// pass; one that skipped may skip, or pass (a note); one that failed
// there may do anything (a note if it passes); a test missing on either
// side is a problem.
func compareOutcomes(wantName string, want map[string]testResult, name string, got map[string]testResult) (problems, notes []string) {
	all := slices.Sorted(maps.Keys(want))
	for n := range got {
		if _, ok := want[n]; !ok {
			all = append(all, n)
		}
	}
	slices.Sort(all)
	for _, n := range all {
		w, inWant := want[n]
		g, inGot := got[n]
		switch {
		case !inWant:
			problems = append(problems, fmt.Sprintf("%s: %s on %s, not in %s", n, g.Outcome, name, wantName))
		case !inGot:
			problems = append(problems, fmt.Sprintf("%s: no outcome on %s (%s on %s): the test binary crashed or timed out?", n, name, w.Outcome, wantName))
		case w.Outcome == outcomePass && g.Outcome != outcomePass:
			problems = append(problems, fmt.Sprintf("%s: %s on %s, passed on %s: %s", n, g.Outcome, name, wantName, g.Detail))
		case w.Outcome == outcomeSkip && g.Outcome == outcomeFail:
			problems = append(problems, fmt.Sprintf("%s: failed on %s, skipped on %s: %s", n, name, wantName, g.Detail))
		case w.Outcome != g.Outcome:
			notes = append(notes, fmt.Sprintf("%s: %s on %s, %s on %s", n, g.Outcome, name, w.Outcome, wantName))
		}
	}
	return problems, notes
}

// outcomeCounts is "N pass, N fail, N skip".
func outcomeCounts(results map[string]testResult) string {
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Outcome]++
	}
	return fmt.Sprintf("%d pass, %d fail, %d skip", counts[outcomePass], counts[outcomeFail], counts[outcomeSkip])
}
