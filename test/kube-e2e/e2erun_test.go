package kubee2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A selection is which specs of e2e.test a conformance run runs: those
// whose full text matches one of focus and none of skip.
type selection struct {
	name        string
	focus, skip []specPattern
}

// e2eSuiteTimeout bounds one run of e2e.test: e2eRunArgs's
// --ginkgo.timeout.
const e2eSuiteTimeout = 4 * time.Hour

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
		t.Fatalf("e2e.test not in %s (hack/kube.sh builds it unless NRINET_KUBE_E2E_SUITE=0): %v", env.kubeBin, err)
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
	// e2eRunArgs: the run's arguments, its selection as --ginkgo.focus and
	// --ginkgo.skip; and what a run of a whole selection adds here.
	args := append(e2eRunArgs(c.cp.adminConfig, filepath.Join(env.kubeBin, "kubectl"), report, len(c.nodes), sel.focus, sel.skip),
		"--e2e-output-dir="+out,
		"--allowed-not-ready-nodes=0",
		"--prepull-images=false",
	)
	ctx, cancel := context.WithTimeout(t.Context(), e2eSuiteTimeout+10*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if tools.ginkgo != "" {
		// The ginkgo CLI takes the ginkgo flags without their prefix and
		// passes what follows -- to each process.
		cli := []string{"--procs=" + strconv.Itoa(procs)}
		var rest []string
		for _, a := range args {
			if g, ok := strings.CutPrefix(a, "--ginkgo."); ok {
				cli = append(cli, "--"+g)
			} else {
				rest = append(rest, a)
			}
		}
		cmd = exec.CommandContext(ctx, tools.ginkgo, append(append(cli, tools.e2eTest, "--"), rest...)...)
	} else {
		cmd = exec.CommandContext(ctx, tools.e2eTest, args...)
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
