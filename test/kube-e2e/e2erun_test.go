package kubee2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A selection is which specs of e2e.test a conformance run runs: those
// whose full text matches one of focus and none of the skip rules.
type selection struct {
	name  string
	focus []string
	skip  []skipRule
}

// A skipRule is a regular expression of spec texts to leave out and why.
type skipRule struct{ pattern, reason string }

// focusRegexp and skipRegexp are the selection as ginkgo's --focus and
// --skip.
func (s selection) focusRegexp() string { return strings.Join(s.focus, "|") }

func (s selection) skipRegexp() string {
	var p []string
	for _, r := range s.skip {
		p = append(p, r.pattern)
	}
	return strings.Join(p, "|")
}

// readSkipRules reads a skip file: one rule a line, "<regexp>\t<reason>";
// empty lines and lines starting with # are left out. Each regexp must
// compile (ginkgo would only say it does not at run time).
func readSkipRules(path string) ([]skipRule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []skipRule
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		pattern, reason, ok := strings.Cut(l, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: %q: want <regexp>\\t<reason>", path, line, l)
		}
		if _, err := regexp.Compile(pattern); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, skipRule{pattern, strings.TrimSpace(reason)})
	}
	return out, sc.Err()
}

// e2eSuiteTimeout bounds one run of e2e.test (ginkgo's own default is one
// hour).
const e2eSuiteTimeout = 3 * time.Hour

// e2eTools are e2e.test and, when built, the ginkgo CLI, which runs the
// specs in parallel processes.
type e2eTools struct {
	e2eTest, ginkgo string
}

// findE2ETools looks for e2e.test and ginkgo in the Kubernetes binaries'
// directory (hack/kube.sh builds them).
func findE2ETools(t testing.TB) e2eTools {
	t.Helper()
	var tools e2eTools
	tools.e2eTest = filepath.Join(env.kubeBin, "e2e.test")
	if _, err := os.Stat(tools.e2eTest); err != nil {
		t.Fatalf("e2e.test not in %s (hack/kube.sh builds it): %v", env.kubeBin, err)
	}
	if g := filepath.Join(env.kubeBin, "ginkgo"); fileExists(g) {
		tools.ginkgo = g
	}
	return tools
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runE2E runs e2e.test's selected specs against the cluster, from the
// host's namespace (the apiserver on the underlay, the nodes and the pods
// reached through routeHostToPods), with procs parallel processes when
// the ginkgo CLI is there (one otherwise). Its output goes to
// out/e2e.log, its JUnit report to out/report/junit_01.xml, which runE2E
// parses. A run that leaves no report fails the test.
func (c *cluster) runE2E(tools e2eTools, sel selection, procs int, out string) specResults {
	t := c.t
	t.Helper()
	report := filepath.Join(out, "report")
	if err := os.MkdirAll(report, 0o755); err != nil {
		t.Fatal(err)
	}
	e2eArgs := []string{
		"--provider=local",
		"--kubeconfig=" + c.cp.adminConfig,
		"--kubectl-path=" + filepath.Join(env.kubeBin, "kubectl"),
		"--report-dir=" + report,
		"--e2e-output-dir=" + out,
		"--disable-log-dump",
		"--allowed-not-ready-nodes=0",
		// Only ginkgo's first process counts the nodes; the others would
		// skip every spec that needs two ("Requires at least 2 nodes (not
		// -1)").
		"--num-nodes=" + strconv.Itoa(len(c.nodes)),
		"--prepull-images=false",
	}
	ginkgoArgs := []string{
		"--focus=" + sel.focusRegexp(),
		"--skip=" + sel.skipRegexp(),
		"--timeout=" + e2eSuiteTimeout.String(),
		"--no-color",
		"-v",
	}
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(t.Context(), e2eSuiteTimeout+10*time.Minute)
	defer cancel()
	if tools.ginkgo != "" {
		args := append([]string{"--procs=" + strconv.Itoa(procs)}, ginkgoArgs...)
		args = append(append(args, tools.e2eTest, "--"), e2eArgs...)
		cmd = exec.CommandContext(ctx, tools.ginkgo, args...)
	} else {
		var args []string
		for _, a := range ginkgoArgs {
			args = append(args, "--ginkgo."+strings.TrimPrefix(a, "--"))
		}
		cmd = exec.CommandContext(ctx, tools.e2eTest, append(args, e2eArgs...)...)
	}
	logPath := filepath.Join(out, "e2e.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.cp.adminConfig)
	start := time.Now()
	t.Logf("cluster %s: running %s (selection %s, %d processes); log %s", c.network, cmd.Path, sel.name, max(procs, 1), logPath)
	runErr := cmd.Run()
	t.Logf("cluster %s: e2e.test ended in %v: %v", c.network, time.Since(start).Round(time.Second), runErr)
	f, err := os.Open(filepath.Join(report, "junit_01.xml"))
	if err != nil {
		t.Fatalf("cluster %s: e2e.test (%v) left no JUnit report: %v; see %s", c.network, runErr, err, logPath)
	}
	defer f.Close()
	res, err := parseJUnit(f)
	if err != nil {
		t.Fatalf("cluster %s: %v", c.network, err)
	}
	t.Logf("cluster %s: %s", c.network, res.summary())
	return res
}

func TestSkipRules_FileParses(t *testing.T) {
	rules, err := readSkipRules(skipFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rule", skipFile)
	}
	if _, err := regexp.Compile(selection{skip: rules}.skipRegexp()); err != nil {
		t.Errorf("the skip rules joined: %v", err)
	}
}
