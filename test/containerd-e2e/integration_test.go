package containerde2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// containerd's own NRI integration tests (integration/nri_test.go and
// nri_linux_test.go of containerd v2.4.2: NRI plugins on upstream's
// pkg/stub, in the test process, against a live containerd over CRI),
// run as containerd's CI runs them (script/test/cri-integration.sh):
// containerd's test binary (go test -c ./integration) against a running
// containerd that a keepalive loop starts again whenever it exits. They
// run on stock containerd, on containerd on nrinet with CNI, and on
// containerd on nrinet in network mode nri with nri-podnet, and every test
// that passes on stock must pass on the other two.

// integrationGateEnv must be set, with NRINET_CONTAINERD_E2E, for
// TestContainerdIntegration to run (make containerd-integration): it
// takes minutes.
const integrationGateEnv = "NRINET_CONTAINERD_INTEGRATION"

// integrationOutEnv names a directory for the results: results.json, and
// for each runtime the test binary's output and containerd's log.
const integrationOutEnv = "NRINET_CONTAINERD_INTEGRATION_OUT"

// Image names the tests use: integration/images' busybox
// (EnsureImageExists pulls it unless containerd has it) and containerd
// v2.4.2's default sandbox image (DefaultSandboxImage in
// internal/cri/config).
const (
	integrationBusyboxRef = "ghcr.io/containerd/busybox:1.36"
	integrationPauseRef   = "registry.k8s.io/pause:3.10.2"
)

// nriTestSocket is where the tests' plugins connect (nri_test.go's
// constant); the tests skip unless it exists.
const nriTestSocket = "/var/run/nri-test.sock"

const (
	// integrationRestartWait is how long the keepalive leaves containerd
	// down after it exited (containerd's CI: RESTART_WAIT_PERIOD, 10 s).
	// The tests' RestartContainerd polls pidof once a second until
	// containerd is gone, then connects again, so it must be well over a
	// second.
	integrationRestartWait = 3 * time.Second
	// integrationTimeout is the test binary's -test.timeout.
	integrationTimeout = 30 * time.Minute
)

var update = flag.Bool("update", false, "TestContainerdIntegration: record "+integrationBaselineFile+" from stock containerd's run")

// integrationBaselineFile holds stock containerd's outcomes, which every
// run is checked against.
const integrationBaselineFile = "testdata/integration-baseline.json"

// integrationBaseline is the baseline file.
type integrationBaseline struct {
	Containerd string                `json:"containerd"`
	Tests      map[string]testResult `json:"tests"`
}

// An integrationRuntime is a containerd the tests run against.
type integrationRuntime struct {
	name string
	opts options
	// prepare readies the instance before the tests run and returns a
	// check for after them (or nil).
	prepare func(c *containerd) (after func())
}

var integrationRuntimes = []integrationRuntime{
	{name: "stock", opts: options{nri: "upstream", network: networkCNI, integration: true}},
	{name: "nrinet-cni", opts: options{nri: "compat", network: networkCNI, integration: true}},
	{
		name: "nrinet-nri",
		opts: options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"podnet"}, integration: true},
		// nri-podnet gives the pods their network. Afterwards, with every
		// pod removed, its allocator must hold no address once it is
		// connected again: the tests' last pods are removed right after
		// containerd's restart, before nri-podnet has reconnected, and it
		// releases what it held for them when it synchronizes.
		prepare: func(c *containerd) func() {
			_, _, net := podnetPlugin.start(c)
			c.waitNetworkReady(true)
			return func() {
				c.waitNetworkReady(true)
				for _, p := range c.plugins {
					p.Stop(pluginTimeout)
				}
				c.checkPodnetIPAM(net)
			}
		},
	},
}

// integrationRun is one runtime's run, as results.json records it.
type integrationRun struct {
	Runtime string `json:"runtime"`
	// Build is hack/containerd.sh's NRINET_CONTAINERD_NRI: upstream or
	// compat.
	Build   string `json:"build"`
	Network string `json:"network"`
	// Seconds is the run from containerd's start to the end of the leak
	// check; TestSeconds the test binary's run.
	Seconds     float64 `json:"seconds"`
	TestSeconds float64 `json:"testSeconds"`
	// Restarts counts the keepalive's restarts of containerd.
	Restarts int                   `json:"restarts"`
	Tests    map[string]testResult `json:"tests"`
}

// TestContainerdIntegration runs containerd's NRI integration tests on
// each of integrationRuntimes and compares the outcomes with stock
// containerd's baseline and with this run's stock outcomes. Run it as
// make containerd-integration does:
//
//	NRINET_CONTAINERD_E2E=1 NRINET_CONTAINERD_INTEGRATION=1 go test -v -run '^TestContainerdIntegration$' .
//
// (-run 'TestContainerdIntegration/^stock$' for one runtime; -update
// records the baseline from the stock run.)
func TestContainerdIntegration(t *testing.T) {
	skipUnlessEnabled(t)
	if os.Getenv(integrationGateEnv) == "" {
		t.Skipf("set %s=1 (make containerd-integration) to run containerd's NRI integration tests", integrationGateEnv)
	}
	var baseline integrationBaseline
	if b, err := os.ReadFile(integrationBaselineFile); err == nil {
		if err := json.Unmarshal(b, &baseline); err != nil {
			t.Fatalf("%s: %v", integrationBaselineFile, err)
		}
	} else if !*update {
		t.Fatalf("%v (record it with -update)", err)
	}
	outDir := os.Getenv(integrationOutEnv)
	if outDir != "" {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	var runs []*integrationRun
	var stock *integrationRun
	for _, rt := range integrationRuntimes {
		t.Run(rt.name, func(t *testing.T) {
			run := runIntegration(t, rt, outDir)
			if run == nil {
				return
			}
			runs = append(runs, run)
			if rt.opts.nri == "upstream" {
				stock = run
			}
			if !(*update && rt.opts.nri == "upstream") {
				compareRun(t, "the baseline", baseline.Tests, run)
			}
			if stock != nil && stock != run {
				compareRun(t, stock.Runtime, stock.Tests, run)
			}
		})
	}

	if *update {
		if stock == nil {
			t.Fatal("-update: stock containerd did not run")
		}
		b := integrationBaseline{Containerd: stockVersion(t), Tests: map[string]testResult{}}
		for n, r := range stock.Tests {
			b.Tests[n] = testResult{Outcome: r.Outcome, Detail: r.Detail}
		}
		writeJSONFile(t, integrationBaselineFile, b)
		t.Logf("recorded %s: %s", integrationBaselineFile, outcomeCounts(b.Tests))
	}
	if outDir != "" {
		writeJSONFile(t, filepath.Join(outDir, "results.json"), runs)
	}
	for _, r := range runs {
		t.Logf("%-10s %s in %.0f s (tests %.0f s, %d restarts of containerd)", r.Runtime, outcomeCounts(r.Tests), r.Seconds, r.TestSeconds, r.Restarts)
	}
}

// compareRun checks a run against other outcomes and reports problems as
// errors, notes as log lines.
func compareRun(t *testing.T, wantName string, want map[string]testResult, run *integrationRun) {
	t.Helper()
	problems, notes := compareOutcomes(wantName, want, run.Runtime, run.Tests)
	for _, p := range problems {
		t.Error(p)
	}
	for _, n := range notes {
		t.Log(n)
	}
}

// stockVersion is the containerd version of the stock build.
func stockVersion(t *testing.T) string {
	return env.builds.get(t.Context(), t, "upstream").version
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runIntegration runs the tests against one runtime: the test binary
// (built the first time), a containerd instance set up for it, the
// runtime's preparation, the tests, the runtime's check; the instance's
// cleanup removes what is left and runs the leak check. The outputs go to
// outDir if set.
func runIntegration(t *testing.T, rt integrationRuntime, outDir string) *integrationRun {
	b := env.builds.get(t.Context(), t, rt.opts.nri)
	start := time.Now()
	bin, built, err := integrationBinary(b)
	if err != nil {
		t.Fatal(err)
	}
	if built {
		t.Logf("built %s in %v", bin, since(start))
	}
	tests, err := integrationTests(b.src)
	if err != nil {
		t.Fatal(err)
	}

	run := &integrationRun{Runtime: rt.name, Build: rt.opts.nri, Network: map[network]string{networkCNI: "cni", networkNRI: "nri"}[rt.opts.network]}
	start = time.Now()
	// Registered before the instance's cleanup, so it runs after it.
	t.Cleanup(func() { run.Seconds = time.Since(start).Seconds() })
	c := startContainerd(t, rt.opts)
	if outDir != "" {
		t.Cleanup(func() {
			if err := os.WriteFile(filepath.Join(outDir, rt.name+".containerd.log"), []byte(c.log.String()), 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	var after func()
	if rt.prepare != nil {
		after = rt.prepare(c)
	}

	testStart := time.Now()
	out, err := c.runIntegrationTests(bin, tests)
	run.TestSeconds = time.Since(testStart).Seconds()
	run.Restarts = c.keepalive.restarts()
	run.Tests = parseTestOutput(out)
	t.Logf("%d tests ran in %v: %s", len(run.Tests), since(testStart), outcomeCounts(run.Tests))
	if outDir != "" {
		if werr := os.WriteFile(filepath.Join(outDir, rt.name+".test.log"), []byte(out), 0o644); werr != nil {
			t.Error(werr)
		}
	}
	for _, n := range tests {
		if r, ok := run.Tests[n]; ok {
			t.Logf("  %-45s %-4s %6.1f s  %s", n, r.Outcome, r.Seconds, r.Detail)
		}
	}
	if err != nil {
		// A failing test makes the binary exit non-zero; the outcomes say
		// which. Anything else (a crash, a timeout) shows in its output.
		t.Logf("test binary: %v", err)
		if len(run.Tests) < len(tests) {
			t.Errorf("test binary: %v, with %d of %d outcomes; its output:\n%s", err, len(run.Tests), len(tests), out)
		}
	}
	if after != nil {
		after()
	}
	return run
}

// runIntegrationTests runs the integration test binary against the
// instance, with the flags containerd's CI passes
// (script/test/cri-integration.sh), for the tests named, and returns its
// output. The binary runs in a mount namespace of its own, in which /run
// is a tmpfs holding nri-test.sock, a symlink to the instance's NRI socket:
// the tests' plugins connect to that fixed path, and instances running at
// the same time each have their own. Mounts propagate into that
// namespace from the host (slave), so that the tests see the pods'
// network namespaces; nothing propagates back. The tests' temporary
// directories are under the instance's directory.
func (c *containerd) runIntegrationTests(bin string, tests []string) (string, error) {
	c.t.Helper()
	tmp := filepath.Join(c.dir, "t")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		c.t.Fatal(err)
	}
	const script = `mount -t tmpfs -o mode=0755,size=1m nrinet-e2e /run && ln -s "$0" ` + nriTestSocket + ` && exec "$@"`
	args := []string{"--mount", "--propagation", "slave", "--", "sh", "-c", script, c.nriSock,
		bin, "-test.run=" + runPattern(tests), "-test.v", "-test.count=1", "-test.timeout=" + integrationTimeout.String(),
		"-cri-endpoint=unix://" + c.sock, "-runtime-handler=", "-containerd-bin=" + c.procName,
		"-build-dir=" + c.build.bin, "-image-list="}
	ctx, cancel := context.WithTimeout(c.t.Context(), integrationTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	c.t.Logf("running %s", strings.Join(cmd.Args, " "))
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s: %w", filepath.Base(bin), err)
	}
	return out.String(), err
}
