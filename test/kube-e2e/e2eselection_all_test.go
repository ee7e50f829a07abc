package kubee2e

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestE2ESelection_All is TestE2ESelection for make conformance-all's
// selection (allFocusFile, allSkipFile): e2e.test's dry run with the
// arguments of a run selects the specs of allSelectedFile, every one of
// them [Conformance], and every [Conformance] spec it does not select is
// skipped by a pattern of allSkipFile, each of which skips at least one
// (a pattern that no longer matches, after a spec is renamed, would hide
// nothing and stay unnoticed). NRINET_UPDATE_SELECTION=1 rewrites
// allSelectedFile instead. Without e2e.test (NRINET_KUBE_BIN or
// hack/kube.sh's with the suite), it skips. No cluster is needed.
func TestE2ESelection_All(t *testing.T) {
	bin := cmp.Or(os.Getenv("NRINET_KUBE_BIN"), env.kubeBin)
	e2eTest := filepath.Join(bin, "e2e.test")
	if _, err := os.Stat(e2eTest); bin == "" || err != nil {
		t.Skipf("no e2e.test in %q: hack/kube.sh builds it with the e2e suite (not with NRINET_KUBE_E2E_SUITE=0, as CI runs it), or set NRINET_KUBE_BIN to its directory", bin)
	}
	focus, err := loadSpecPatterns(allFocusFile)
	if err != nil {
		t.Fatal(err)
	}
	skip, err := loadSpecPatterns(allSkipFile)
	if err != nil {
		t.Fatal(err)
	}
	version, err := exec.Command(e2eTest, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", e2eTest, err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(dryRunKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := dryRun(e2eTest, dir, e2eRunArgs(kubeconfig, filepath.Join(bin, "kubectl"), filepath.Join(dir, "reports"), 2, focus, skip))
	if err != nil {
		t.Fatal(err)
	}
	skips := make([]int, len(skip)) // conformance specs each pattern skips
	var selected []string
	conformance := 0
	for _, s := range specs {
		isConformance := strings.Contains(s.text, "[Conformance]")
		if isConformance {
			conformance++
		}
		switch {
		case s.selected && !isConformance:
			t.Errorf("selected but not [Conformance]: %s", s.text)
		case s.selected:
			selected = append(selected, s.text+"\t"+s.location)
		case isConformance:
			i := slices.IndexFunc(skip, func(p specPattern) bool { return regexp.MustCompile(p.Pattern).MatchString(s.text) })
			if i < 0 {
				t.Errorf("conformance spec neither selected nor skipped by %s: %s", allSkipFile, s.text)
				continue
			}
			skips[i]++
		}
	}
	for i, p := range skip {
		if skips[i] == 0 {
			t.Errorf("%s: %q skips no [Conformance] spec", allSkipFile, p.Pattern)
		}
	}
	slices.Sort(selected)
	got := fmt.Sprintf("# The specs of e2e.test %s that all/focus.txt selects and all/skip.txt does not skip:\n"+
		"# %d of the %d [Conformance] specs (%d specs in all). Written by\n"+
		"# NRINET_UPDATE_SELECTION=1 go test -run TestE2ESelection_All (docs/dev/kube-e2e.md).\n"+
		"# spec<TAB>its place in Kubernetes' source\n%s\n",
		strings.TrimSpace(string(version)), len(selected), conformance, len(specs), strings.Join(selected, "\n"))
	if os.Getenv("NRINET_UPDATE_SELECTION") != "" {
		if err := os.WriteFile(allSelectedFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d specs", allSelectedFile, len(selected))
		return
	}
	want, err := os.ReadFile(allSelectedFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s is not what e2e.test selects (NRINET_UPDATE_SELECTION=1 rewrites it); e2e.test selects:\n%s", allSelectedFile, got)
	}
}
