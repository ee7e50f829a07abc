package critest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// SynchronizationSpecs are critest's specs of a container created while a
// plugin synchronizes, which must pass on nrinet (a runtime that loses
// such a container fails them; critest reports that as a skip).
var SynchronizationSpecs = []string{
	"should receive a callback for container created during the Synchronize call",
	"should receive information about all containers without the race condition during initialization",
}

// synchronizationContainer is the text of the Describe the
// SynchronizationSpecs are in.
const synchronizationContainer = "[k8s.io] NRI plugin synchronization "

// Check judges res: each spec that did not pass while it passed in
// reference (every spec that did not pass or skip, without a reference)
// is a problem, and so is each mustPass spec that matched focus and did
// not pass. An excused failure is a note, not a problem.
func Check(res, reference []Spec, mustPass []string, focus string) (problems, notes []string) {
	passedBefore := map[string]bool{}
	for _, r := range reference {
		passedBefore[r.Name] = r.State == "passed"
	}
	for _, r := range res {
		if r.State == "passed" || r.State == "skipped" && r.Message == "" {
			continue // skipped without a message: not selected
		}
		if r.Excused != "" {
			notes = append(notes, fmt.Sprintf("%s %s: %s (not counted)", r.Name, r.State, r.Excused))
			continue
		}
		if reference == nil && r.State != "skipped" || passedBefore[r.Name] {
			problems = append(problems, fmt.Sprintf("%s %s%s", r.State, r.Name, r.Short()))
		}
	}
	re := regexp.MustCompile(focus)
	for _, want := range mustPass {
		i := slices.IndexFunc(res, func(r Spec) bool { return strings.HasSuffix(r.Name, want) })
		switch {
		case i < 0:
			if re.MatchString(synchronizationContainer + want) {
				problems = append(problems, fmt.Sprintf("did not run %q", want))
			}
		case res[i].State != "passed":
			problems = append(problems, fmt.Sprintf("%q %s%s; it must pass on nrinet", want, res[i].State, res[i].Short()))
		}
	}
	return problems, notes
}
