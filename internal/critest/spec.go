package critest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Spec is one spec's outcome in critest's Ginkgo report.
type Spec struct {
	// Name is the spec's full text: its containers' texts and its own.
	Name string
	// State is Ginkgo's: passed, failed, skipped, panicked, ...
	State   string
	RunTime time.Duration
	// Message is the failure or skip message.
	Message string
	// Excused, for a failure, says why it is the runtime's own known
	// failure (stock too) and is reported, not counted; see Check.
	Excused string
}

// Short returns ": " and the first line of a failure's or skip's message,
// or "" for a spec that passed or has none.
func (s Spec) Short() string {
	if s.Message == "" || s.State == "passed" {
		return ""
	}
	m, _, _ := strings.Cut(s.Message, "\n")
	return ": " + m
}

// ReadReport reads a Ginkgo v2 JSON report (-ginkgo.json-report) and
// returns its It specs whose full text matches focus, in the order they
// ran.
func ReadReport(path, focus string) ([]Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
			RunTime                 time.Duration
			StartTime               time.Time
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("ginkgo report %s: %w", path, err)
	}
	re, err := regexp.Compile(focus)
	if err != nil {
		return nil, err
	}
	type timed struct {
		Spec
		start time.Time
	}
	var specs []timed
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
			if !re.MatchString(name) {
				continue
			}
			specs = append(specs, timed{Spec{Name: name, State: s.State, RunTime: s.RunTime, Message: s.Failure.Message}, s.StartTime})
		}
	}
	slices.SortStableFunc(specs, func(a, b timed) int { return a.start.Compare(b.start) })
	out := make([]Spec, len(specs))
	for i, s := range specs {
		out[i] = s.Spec
	}
	return out, nil
}
