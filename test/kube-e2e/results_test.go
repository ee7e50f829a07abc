package kubee2e

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// A specState is what a selected spec of e2e.test came to: passed, failed
// (ginkgo's failed, timedout, panicked, interrupted and aborted all count
// as failed) or skipped (at run time, by the spec itself: a missing
// feature of the cluster).
type specState string

const (
	specPassed  specState = "passed"
	specFailed  specState = "failed"
	specSkipped specState = "skipped"
)

// specResults maps the full text of each selected spec to its state.
type specResults map[string]specState

// junitReport is the part of e2e.test's JUnit report (<report
// dir>/junit_01.xml) the comparison reads.
type junitReport struct {
	Suites []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Status  string `xml:"status,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// parseJUnit reads e2e.test's JUnit report and returns the state of every
// spec the run selected. Ginkgo lists every spec of the suite; those its
// focus and skip filtered out are skipped with the message "skipped",
// while a spec that skips itself adds its reason ("skipped - <reason>"),
// so the first are left out. Suite nodes ([SynchronizedBeforeSuite], ...)
// are left out too, except when they failed: then the run is broken, and
// they are listed as failed under their name.
func parseJUnit(r io.Reader) (specResults, error) {
	var rep junitReport
	if err := xml.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("JUnit report: %w", err)
	}
	out := specResults{}
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			name, isSpec := strings.CutPrefix(c.Name, "[It] ")
			var state specState
			switch c.Status {
			case "passed":
				state = specPassed
			case "skipped":
				if c.Skipped != nil && c.Skipped.Message == "skipped" {
					continue // filtered out: not selected
				}
				state = specSkipped
			case "pending":
				continue
			default: // failed, timedout, panicked, interrupted, aborted
				state = specFailed
			}
			if !isSpec && state != specFailed {
				continue
			}
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("JUnit report: spec %q listed twice", name)
			}
			out[name] = state
		}
	}
	return out, nil
}

// writeTSV writes results as lines "<spec>\t<state>", sorted by spec.
func (r specResults) writeTSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, name := range slices.Sorted(maps.Keys(r)) {
		if strings.ContainsAny(name, "\t\n") {
			return fmt.Errorf("spec name %q has a tab or newline", name)
		}
		fmt.Fprintf(bw, "%s\t%s\n", name, r[name])
	}
	return bw.Flush()
}

// readTSV reads what writeTSV wrote.
func readTSV(r io.Reader) (specResults, error) {
	out := specResults{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		name, state, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			return nil, fmt.Errorf("line %d: %q: want <spec>\\t<state>", line, sc.Text())
		}
		switch s := specState(state); s {
		case specPassed, specFailed, specSkipped:
			out[name] = s
		default:
			return nil, fmt.Errorf("line %d: state %q: want passed, failed or skipped", line, state)
		}
	}
	return out, sc.Err()
}

// counts returns how many specs are in each state.
func (r specResults) counts() map[specState]int {
	c := map[specState]int{}
	for _, s := range r {
		c[s]++
	}
	return c
}

// summary is "N specs: P passed, F failed, S skipped".
func (r specResults) summary() string {
	c := r.counts()
	return fmt.Sprintf("%d specs: %d passed, %d failed, %d skipped", len(r), c[specPassed], c[specFailed], c[specSkipped])
}

// A regression is a spec that passed on the baseline and did not pass on
// the other network (state "missing" if that run did not have it).
type regression struct {
	spec  string
	state string
}

// regressions lists, sorted, every spec that passed on baseline but not
// on other. A spec passing on other only, or failing on both, is no
// regression.
func regressions(baseline, other specResults) []regression {
	var out []regression
	for _, name := range slices.Sorted(maps.Keys(baseline)) {
		if baseline[name] != specPassed {
			continue
		}
		got, ok := other[name]
		switch {
		case !ok:
			out = append(out, regression{name, "missing"})
		case got != specPassed:
			out = append(out, regression{name, string(got)})
		}
	}
	return out
}

// writeResultsFile writes results as TSV to path.
func writeResultsFile(path string, r specResults) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.writeTSV(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// junitSample is e2e.test's JUnit report in small: a suite node, a passed
// spec, a spec that failed, one that skipped itself, one filtered out,
// one that timed out.
const junitSample = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" disabled="1" errors="0" failures="2" time="12.5">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="6" disabled="0" skipped="2" errors="0" failures="2" time="12.5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.2"></testcase>
    <testcase name="[It] [sig-network] DNS should provide DNS for the cluster [Conformance]" classname="Kubernetes e2e suite" status="passed" time="5.1"></testcase>
    <testcase name="[It] [sig-network] Services should serve a basic endpoint from pods [Conformance]" classname="Kubernetes e2e suite" status="failed" time="3.0"><failure type="failed">boom</failure></testcase>
    <testcase name="[It] [sig-network] Services should work after restarting kube-proxy [Disruptive]" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] [sig-network] Networking should check kube-proxy urls" classname="Kubernetes e2e suite" status="skipped" time="0.1"><skipped message="skipped - Requires at least 3 nodes"></skipped></testcase>
    <testcase name="[It] [sig-network] Proxy version v1 should proxy logs on node" classname="Kubernetes e2e suite" status="timedout" time="900"><failure type="timedout">timed out</failure></testcase>
  </testsuite>
</testsuites>`

func TestParseJUnit_KeepsSelectedSpecsOnly(t *testing.T) {
	got, err := parseJUnit(strings.NewReader(junitSample))
	if err != nil {
		t.Fatal(err)
	}
	want := specResults{
		"[sig-network] DNS should provide DNS for the cluster [Conformance]":           specPassed,
		"[sig-network] Services should serve a basic endpoint from pods [Conformance]": specFailed,
		"[sig-network] Networking should check kube-proxy urls":                        specSkipped,
		"[sig-network] Proxy version v1 should proxy logs on node":                     specFailed,
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseJUnit:\n got %v\nwant %v", got, want)
	}
	if s := got.summary(); s != "4 specs: 1 passed, 2 failed, 1 skipped" {
		t.Errorf("summary %q", s)
	}
}

func TestParseJUnit_FailedSuiteNodeIsAFailure(t *testing.T) {
	const broken = `<testsuites><testsuite>
<testcase name="[SynchronizedBeforeSuite]" status="failed"><failure type="failed">no nodes</failure></testcase>
<testcase name="[It] [sig-network] DNS should x" status="skipped"><skipped message="skipped - Spec skipped because an earlier spec in an ordered container failed"></skipped></testcase>
</testsuite></testsuites>`
	got, err := parseJUnit(strings.NewReader(broken))
	if err != nil {
		t.Fatal(err)
	}
	if got["[SynchronizedBeforeSuite]"] != specFailed {
		t.Errorf("a failed suite node is not listed as failed: %v", got)
	}
}

func TestResultsTSV_RoundTrip(t *testing.T) {
	r, err := parseJUnit(strings.NewReader(junitSample))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.writeTSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if !slices.IsSorted(lines) || len(lines) != len(r) {
		t.Errorf("TSV not one sorted line per spec:\n%s", b.String())
	}
	back, err := readTSV(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back, r) {
		t.Errorf("read back %v, wrote %v", back, r)
	}
	if _, err := readTSV(strings.NewReader("spec\tflaky\n")); err == nil {
		t.Error("readTSV took an unknown state")
	}
}

func TestRegressions_PassedOnBaselineOnly(t *testing.T) {
	baseline := specResults{"a": specPassed, "b": specPassed, "c": specFailed, "d": specPassed, "e": specSkipped}
	nrinet := specResults{"a": specPassed, "b": specFailed, "c": specPassed, "e": specPassed, "f": specFailed}
	got := regressions(baseline, nrinet)
	want := []regression{{"b", "failed"}, {"d", "missing"}}
	if !slices.Equal(got, want) {
		t.Errorf("regressions: got %v, want %v", got, want)
	}
}
