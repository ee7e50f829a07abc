package kubee2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The files selecting which specs of Kubernetes' e2e suite run against the
// dual-stack cluster network (docs/dev/kube-e2e.md, "Kubernetes' own network
// specs"): the focus and skip patterns, and the specs they select in
// e2e.test v1.37.2. A single-stack family has its own three, in
// conformance/<family>/ (selectionFiles).
const (
	focusFile    = "conformance/focus.txt"
	skipFile     = "conformance/skip.txt"
	selectedFile = "conformance/selected-specs.txt"
)

// selectionFiles returns the focus, skip and selected-specs files of a
// cluster family: the dual-stack ones above, or the same names in
// conformance/<family>/, the one source of that family's selection.
func selectionFiles(f clusterFamily) (focus, skip, selected string) {
	if f == familyDual {
		return focusFile, skipFile, selectedFile
	}
	dir := filepath.Join("conformance", string(f))
	return filepath.Join(dir, filepath.Base(focusFile)), filepath.Join(dir, filepath.Base(skipFile)),
		filepath.Join(dir, filepath.Base(selectedFile))
}

// A specPattern is one line of focusFile or skipFile: a regular expression
// (RE2, as ginkgo's --focus and --skip take it) matched against a spec's
// full text, as e2e.test --list-tests prints it, and why.
type specPattern struct {
	Pattern, Reason string
}

// loadSpecPatterns reads a file of spec patterns: one `pattern<TAB>reason`
// a line; empty lines and lines starting with # are comments. Each pattern
// must compile and have a reason.
func loadSpecPatterns(file string) ([]specPattern, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var patterns []specPattern
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, reason, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(reason) == "" || p == "" {
			return nil, fmt.Errorf("%s:%d: want pattern<TAB>reason, got %q", file, n, line)
		}
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		patterns = append(patterns, specPattern{p, reason})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(patterns) == 0 {
		return nil, fmt.Errorf("%s: no pattern", file)
	}
	return patterns, nil
}

// selectionArgs returns e2e.test's arguments selecting the specs of focus
// but those of skip: one --ginkgo.focus per focus pattern and one
// --ginkgo.skip per skip pattern (ginkgo runs a spec that matches any
// focus and no skip). For the ginkgo CLI, drop the "ginkgo." prefix.
func selectionArgs(focus, skip []specPattern) []string {
	var args []string
	for _, p := range focus {
		args = append(args, "--ginkgo.focus="+p.Pattern)
	}
	for _, p := range skip {
		args = append(args, "--ginkgo.skip="+p.Pattern)
	}
	return args
}

// e2eRunArgs returns e2e.test's arguments for a run of the selection
// against the cluster of kubeconfig with nodes nodes, JUnit and other
// reports in reportDir: docs/dev/kube-e2e.md explains each.
func e2eRunArgs(kubeconfig, kubectl, reportDir string, nodes int, focus, skip []specPattern) []string {
	args := []string{
		"--provider=local",
		"--kubeconfig=" + kubeconfig,
		"--kubectl-path=" + kubectl,
		fmt.Sprintf("--num-nodes=%d", nodes),
		"--dns-domain=cluster.local",
		"--report-dir=" + reportDir,
		"--disable-log-dump",
		"--ginkgo.no-color",
		"--ginkgo.v",
		"--ginkgo.timeout=4h",
	}
	return append(args, selectionArgs(focus, skip)...)
}

// TestE2ESelection runs e2e.test's dry run with the arguments of a run
// (e2eRunArgs: the selection of each family's focus and skip files,
// selectionFiles) and checks that e2e.test takes them, writes its JUnit
// report, and selects the specs of the family's selected-specs file,
// every [Conformance] spec of SIG network among them, and in a
// single-stack family no [Feature:IPv6DualStack] spec.
// NRINET_UPDATE_SELECTION=1 rewrites the selected-specs files instead. It
// needs e2e.test: in NRINET_KUBE_BIN, or where hack/kube.sh built it (with
// the suite enabled); without it, it skips. No cluster is needed.
func TestE2ESelection(t *testing.T) {
	bin := os.Getenv("NRINET_KUBE_BIN")
	if bin == "" {
		bin = env.kubeBin
	}
	e2eTest := filepath.Join(bin, "e2e.test")
	if _, err := os.Stat(e2eTest); bin == "" || err != nil {
		t.Skipf("no e2e.test in %q: hack/kube.sh builds it with the e2e suite (not with NRINET_KUBE_E2E_SUITE=0, as CI runs it), or set NRINET_KUBE_BIN to its directory", bin)
	}
	version, err := exec.Command(e2eTest, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", e2eTest, err)
	}
	for _, family := range clusterFamilies {
		t.Run(string(family), func(t *testing.T) {
			checkSelection(t, e2eTest, bin, strings.TrimSpace(string(version)), family)
		})
	}
}

// checkSelection is TestE2ESelection for one family.
func checkSelection(t *testing.T, e2eTest, bin, version string, family clusterFamily) {
	focusPath, skipPath, selectedPath := selectionFiles(family)
	focus, err := loadSpecPatterns(focusPath)
	if err != nil {
		t.Fatal(err)
	}
	skip, err := loadSpecPatterns(skipPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(dryRunKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	specs, err := dryRun(e2eTest, dir, e2eRunArgs(kubeconfig, filepath.Join(bin, "kubectl"), reports, 2, focus, skip))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(reports, "junit_01.xml")); err != nil {
		t.Errorf("no JUnit report: %v", err)
	}
	var selected []string
	conformance := 0
	for _, s := range specs {
		isConformance := strings.HasPrefix(s.text, "[sig-network] ") && strings.Contains(s.text, "[Conformance]")
		if isConformance {
			conformance++
		}
		if !s.selected {
			if isConformance {
				t.Errorf("conformance spec not selected: %s", s.text)
			}
			continue
		}
		if family != familyDual && strings.Contains(s.text, "[Feature:IPv6DualStack]") {
			t.Errorf("%s cluster: dual-stack spec selected: %s", family, s.text)
		}
		selected = append(selected, s.text+"\t"+s.location)
	}
	slices.Sort(selected)
	got := fmt.Sprintf("# The specs of e2e.test %s that %s selects and %s does not skip: %d of %d\n"+
		"# (%d of them [sig-network] [Conformance], all there are). Written by\n"+
		"# NRINET_UPDATE_SELECTION=1 go test -run TestE2ESelection (docs/dev/kube-e2e.md).\n"+
		"# spec<TAB>its place in Kubernetes' source\n%s\n",
		version, filepath.Base(focusPath), filepath.Base(skipPath),
		len(selected), len(specs), conformance, strings.Join(selected, "\n"))
	if os.Getenv("NRINET_UPDATE_SELECTION") != "" {
		if err := os.WriteFile(selectedPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d specs", selectedPath, len(selected))
		return
	}
	want, err := os.ReadFile(selectedPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s is not what e2e.test selects (NRINET_UPDATE_SELECTION=1 rewrites it); e2e.test selects:\n%s", selectedPath, got)
	}
}

// A dryRunSpec is one spec of an e2e.test dry run.
type dryRunSpec struct {
	text     string // full text, as --list-tests prints it
	location string // file:line, the file relative to Kubernetes' module
	selected bool
}

// dryRunKubeconfig points e2e.test at a server that is not there: a dry
// run connects to nothing.
const dryRunKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: none
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: none
  context:
    cluster: none
    user: none
users:
- name: none
  user: {}
current-context: none
`

// dryRun runs e2e.test's dry run (--ginkgo.dry-run: nothing runs, no
// cluster needed) with args in dir and returns every spec with whether it
// was selected, read from its ginkgo JSON report.
func dryRun(e2eTest, dir string, args []string) ([]dryRunSpec, error) {
	report := filepath.Join(dir, "report.json")
	args = append(slices.Clone(args), "--ginkgo.dry-run", "--ginkgo.json-report="+report)
	cmd := exec.Command(e2eTest, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("e2e.test %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	// The fields of ginkgo's types.Report this needs.
	var reports []struct {
		SpecReports []struct {
			LeafNodeType            string
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeLocation        struct {
				FileName   string
				LineNumber int
			}
			State string
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", report, err)
	}
	if len(reports) != 1 {
		return nil, fmt.Errorf("%s: %d suites, want 1", report, len(reports))
	}
	var specs []dryRunSpec
	for _, r := range reports[0].SpecReports {
		if r.LeafNodeType != "It" {
			continue // suite setup and reporting nodes
		}
		text := strings.Join(append(slices.Clone(r.ContainerHierarchyTexts), r.LeafNodeText), " ")
		loc := strings.TrimPrefix(r.LeafNodeLocation.FileName, "k8s.io/kubernetes/")
		specs = append(specs, dryRunSpec{
			text:     text,
			location: fmt.Sprintf("%s:%d", loc, r.LeafNodeLocation.LineNumber),
			selected: r.State == "passed",
		})
	}
	if len(specs) == 0 {
		return nil, errors.New("the dry run reported no spec")
	}
	return specs, nil
}
