package kubee2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The steps of docs/install.md's runbook "Migrating a live cluster, node
// by node", by the names its steps carry (<!-- migration: NAME -->), in
// its order. TestMigration runs exactly these, in this order (each
// step's function is migrationStepFuncs[NAME], after the kubectl lines of
// the page's step), and TestMigrationRunbook_MatchesStage checks them
// against the page.
var (
	// migrationOnce is run once, before the first node.
	migrationOnce = []string{"apply-daemonset"}
	// migrationToNrinet moves one node from CNI to nrinet.
	migrationToNrinet = []string{"install-runtime", "drain", "switch-to-nri", "clear-cni", "label", "uncordon"}
	// migrationToCNI moves one node back to CNI.
	migrationToCNI = []string{"drain", "unlabel", "switch-to-cni", "uninstall", "restore-cni", "uncordon"}
)

// installDoc is the page that holds the runbook.
var installDoc = filepath.Join("..", "..", "docs", "install.md")

// A runbookStep is one step of the runbook as the page writes it: its
// name and the kubectl commands of its shell blocks (each as its
// arguments, after kubectl, the comment cut off).
type runbookStep struct {
	name    string
	kubectl [][]string
}

var runbookMarker = regexp.MustCompile(`^\s*<!-- migration: ([a-z0-9-]+) -->\s*$`)

// parseRunbook reads the runbook's steps from the page: each marker
// starts a step, which runs to the next marker or heading; the kubectl
// lines of its fenced shell blocks are its commands.
func parseRunbook(text string) ([]runbookStep, error) {
	var steps []runbookStep
	inStep, inBlock := false, false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		switch {
		case runbookMarker.MatchString(l):
			steps = append(steps, runbookStep{name: runbookMarker.FindStringSubmatch(l)[1]})
			inStep, inBlock = true, false
		case strings.HasPrefix(trimmed, "```"):
			inBlock = !inBlock && inStep
		case strings.HasPrefix(l, "#") && !inBlock:
			inStep = false
		case inStep && inBlock && strings.HasPrefix(trimmed, "kubectl "):
			cmd, _, _ := strings.Cut(trimmed, "#")
			if strings.HasSuffix(strings.TrimSpace(cmd), `\`) {
				return nil, fmt.Errorf("%s:%d: a kubectl line continued on the next: write it on one line", installDoc, n)
			}
			s := &steps[len(steps)-1]
			s.kubectl = append(s.kubectl, strings.Fields(cmd)[1:])
		}
	}
	return steps, sc.Err()
}

// migrationRunbook reads the page and returns its steps, split as the
// stage runs them: once, onto nrinet, back to CNI. It fails the test if
// the page's steps are not the stage's.
func migrationRunbook(t testing.TB) (once, toNrinet, toCNI []runbookStep) {
	t.Helper()
	b, err := os.ReadFile(installDoc)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseRunbook(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	want := slices.Concat(migrationOnce, migrationToNrinet, migrationToCNI)
	if !slices.Equal(names, want) {
		t.Fatalf("%s: the runbook's steps are %q; TestMigration runs %q", installDoc, names, want)
	}
	a, b2 := len(migrationOnce), len(migrationOnce)+len(migrationToNrinet)
	return steps[:a], steps[a:b2], steps[b2:]
}

// TestMigrationRunbook_MatchesStage checks, without a cluster, that the
// runbook of docs/install.md has TestMigration's steps in its order,
// that each has the stage's function, and that its kubectl commands are
// the ones the stage can run: on the node (<node>) or with the overlay
// (deploy/overlays/nri-podnet), nothing else to fill in.
func TestMigrationRunbook_MatchesStage(t *testing.T) {
	once, toNrinet, toCNI := migrationRunbook(t)
	kubectl := 0
	for _, s := range slices.Concat(once, toNrinet, toCNI) {
		if migrationStepFuncs[s.name] == nil {
			t.Errorf("step %s: TestMigration has no function for it", s.name)
		}
		for _, args := range s.kubectl {
			kubectl++
			for _, a := range args {
				if strings.ContainsAny(a, "<>") && a != "<node>" {
					t.Errorf("step %s: kubectl %s: %q is neither <node> nor a value", s.name, strings.Join(args, " "), a)
				}
			}
		}
	}
	// The kubectl steps: what the cluster's operator runs.
	for _, c := range []struct {
		steps []runbookStep
		name  string
		want  string
	}{
		{once, "apply-daemonset", "apply -k " + podnetOverlayDir},
		{toNrinet, "drain", "drain <node> --ignore-daemonsets --delete-emptydir-data"},
		{toNrinet, "label", "label node <node> " + podNetworkLabel + "=" + podNetworkPodnet},
		{toNrinet, "uncordon", "uncordon <node>"},
		{toCNI, "unlabel", "label node <node> " + podNetworkLabel + "-"},
	} {
		i := slices.IndexFunc(c.steps, func(s runbookStep) bool { return s.name == c.name })
		if i < 0 || !slices.ContainsFunc(c.steps[i].kubectl, func(a []string) bool { return strings.Join(a, " ") == c.want }) {
			t.Errorf("step %s: no command kubectl %s", c.name, c.want)
		}
	}
	t.Logf("%d steps, %d kubectl commands", len(once)+len(toNrinet)+len(toCNI), kubectl)
}

// TestParseRunbook checks the parser on a page of its own: markers,
// blocks, comments, headings that end a step.
func TestParseRunbook(t *testing.T) {
	page := "# Title\n<!-- migration: one -->\ntext kubectl no\n```sh\nkubectl get nodes   # a comment\nssh node true\n```\n" +
		"## Next\n```sh\nkubectl not-in-a-step\n```\n<!-- migration: two -->\n```sh\n# a shell comment\nkubectl drain <node>\n```\n"
	steps, err := parseRunbook(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []runbookStep{{"one", [][]string{{"get", "nodes"}}}, {"two", [][]string{{"drain", "<node>"}}}}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("parsed %v, want %v", steps, want)
	}
	if _, err := parseRunbook("<!-- migration: x -->\n```sh\nkubectl drain \\\n  <node>\n```\n"); err == nil {
		t.Error("a continued kubectl line parsed; want an error")
	}
}
