package runtimesuite

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// GinkgoPrefix starts the name of a Ginkgo spec's result: a Ginkgo suite is
// one Go test, so its specs are read from its JSON report (ReadGinkgoReport)
// and judged one by one, each under its own name.
const GinkgoPrefix = "ginkgo: "

// ginkgoReport is the part of Ginkgo v2's JSON report (--json-report, an
// array of types.Report) the suites read.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		State                   string
		Failure                 struct{ Message string }
	}
}

// ReadGinkgoReport reads a Ginkgo JSON report and returns a result per
// spec, named GinkgoPrefix and the spec's full text (its containers' texts
// and its own; a suite node by its type), with " #2" and so on for a text
// that repeats. Passed is pass; skipped and pending are skip; anything
// else (failed, panicked, interrupted, timed out) is fail, with the
// failure's first line as why.
func ReadGinkgoReport(file string) (map[string]Result, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := map[string]Result{}
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			text := strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
			if s.LeafNodeType != "It" {
				text = strings.TrimSpace("[" + s.LeafNodeType + "] " + text)
			}
			name := GinkgoPrefix + text
			for n := 2; ; n++ {
				if _, dup := out[name]; !dup {
					break
				}
				name = fmt.Sprintf("%s%s #%d", GinkgoPrefix, text, n)
			}
			var r Result
			switch s.State {
			case "passed":
				r.Outcome = OutcomePass
			case "skipped", "pending":
				r.Outcome = OutcomeSkip
			default:
				msg, _, _ := strings.Cut(strings.TrimSpace(s.Failure.Message), "\n")
				r = Result{Outcome: OutcomeFail, Why: s.State + ": " + msg}
			}
			out[name] = r
		}
	}
	return out, nil
}
