package containerde2e

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/gobin"
)

// critest, cri-tools' CRI validation suite, run by TestCritest.
const (
	// critestGateEnv must be set, besides gateEnv, for TestCritest to run
	// (make critest): it takes minutes.
	critestGateEnv = "NRINET_CRITEST"
	// critestFocusEnv is critest's -ginkgo.focus (default critestFocus).
	critestFocusEnv = "NRINET_CRITEST_FOCUS"
	critestFocus    = "NRI"
	// critestOutEnv names a directory for critest's output and reports,
	// and the summary (results.md); by default they go to the test's
	// temporary directory and the summary to the test log only.
	critestOutEnv = "NRINET_CRITEST_OUT"
	// critestTimeout bounds one critest run.
	critestTimeout = 20 * time.Minute
)

// critestRequestTimeout is containerd's NRI plugin_request_timeout in the
// variants that do not keep containerd's default (2 s). critest's specs
// "should receive a callback for container created during the Synchronize
// call" and "... without the race condition during initialization" hold
// their plugin's Synchronize answer for 2 s: with the default the runtime
// gives up on the plugin's Synchronize, drops the plugin, and the specs
// skip because the plugin never hears of the containers (stock containerd
// and containerd on nrinet alike; docs/containerd.md, "critest").
const critestRequestTimeout = 10 * time.Second

// critestVariant is one containerd setup critest runs against.
type critestVariant struct {
	name string
	opts options
	// podnet starts nri-podnet, the pods' network in network mode nri.
	podnet bool
	// strict: the critestMustPass specs must pass, and so must every
	// spec that passed on the variant named reference (or, when that did
	// not run, every spec); else results are only reported.
	strict    bool
	reference string
}

var critestVariants = []critestVariant{
	{name: "stock-2s", opts: options{nri: "upstream", network: networkCNI}},
	{name: "compat-2s", opts: options{nri: "compat", network: networkCNI}},
	{name: "stock", opts: options{nri: "upstream", network: networkCNI, nriRequestTimeout: critestRequestTimeout}},
	{name: "compat", opts: options{nri: "compat", network: networkCNI, nriRequestTimeout: critestRequestTimeout},
		strict: true, reference: "stock"},
	{name: "compat-nri-podnet", podnet: true, strict: true, reference: "stock",
		opts: options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"podnet"}, nriRequestTimeout: critestRequestTimeout}},
}

// TestCritest runs critest v1.37.0's specs that match NRINET_CRITEST_FOCUS
// (default "NRI") against stock containerd and containerd on nrinet (CNI
// mode, and network mode nri with nri-podnet), each instance with a
// registry on 127.0.0.1 that serves critest's test image in place of
// registry.k8s.io (containerd's hosts.toml), and reports each spec's
// outcome per runtime. See docs/containerd.md, "critest".
func TestCritest(t *testing.T) {
	skipUnlessEnabled(t)
	if os.Getenv(critestGateEnv) == "" {
		t.Skipf("set %s=1 (make critest) to run critest", critestGateEnv)
	}
	bin := os.Getenv("NRINET_CRITEST_BIN")
	if bin == "" {
		start := time.Now()
		var err error
		bin, err = gobin.InstallTest(gobin.Dir("nrinet-critest", crictlVersion), "sigs.k8s.io/cri-tools", "cmd/critest", crictlVersion)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("critest %s at %s (%v)", crictlVersion, bin, time.Since(start).Round(time.Millisecond))
	}
	busybox, err := findBusybox()
	if err != nil {
		t.Fatal(err)
	}
	applets, err := busyboxList(busybox)
	if err != nil {
		t.Fatal(err)
	}
	img, err := busyboxImage(busybox, applets)
	if err != nil {
		t.Fatal(err)
	}
	focus := cmp.Or(os.Getenv(critestFocusEnv), critestFocus)
	out := os.Getenv(critestOutEnv)
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	results := map[string][]critest.Spec{}
	times := map[string]time.Duration{}
	for _, v := range critestVariants {
		t.Run(v.name, func(t *testing.T) {
			start := time.Now()
			res := runCritest(t, v, bin, img, focus, out)
			times[v.name] = time.Since(start)
			results[v.name] = res
			for _, r := range res {
				t.Logf("%-7s %6.1fs  %s%s", r.State, r.RunTime.Seconds(), r.Name, r.Short())
			}
			if v.strict {
				problems, notes := critest.Check(res, results[v.reference], critest.SynchronizationSpecs, focus)
				for _, n := range notes {
					t.Logf("critest: %s", n)
				}
				for _, p := range problems {
					t.Errorf("critest: %s", p)
				}
			}
		})
	}
	var names []string
	for _, v := range critestVariants {
		names = append(names, v.name)
	}
	summary := critest.Summary(names, results, times)
	t.Logf("critest %s, focus %q:\n%s", crictlVersion, focus, summary)
	if os.Getenv(critestOutEnv) != "" {
		if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runCritest starts containerd as v says, with the registry, runs critest
// against it and returns the outcome of each spec that matched focus.
func runCritest(t *testing.T, v critestVariant, bin string, img v1.Image, focus, out string) []critest.Spec {
	reg := startRegistry(t, map[string]v1.Image{critest.TestImageRepo + ":" + critest.TestImageTag: img})
	hosts := filepath.Join(t.TempDir(), "certs.d")
	reg.writeHosts(t, hosts, critest.TestImageHost)
	opts := v.opts
	opts.registryConfigPath = hosts
	c := startContainerd(t, opts)
	if v.podnet {
		podnetPlugin.start(c)
		c.waitNetworkReady(true)
	}
	report := filepath.Join(out, v.name+".json")
	logPath := filepath.Join(out, v.name+".log")
	start := time.Now()
	runErr := critest.Run(t.Context(), critest.Options{
		Bin: bin, Endpoint: "unix://" + c.sock, NRISocket: c.nriSock, CrictlConfig: c.crictlConfig,
		Focus: focus, Report: report, Log: logPath,
		Dir:     c.dir, // critest looks for crictl.yaml beside itself and in its working directory too
		Timeout: critestTimeout,
	})
	t.Logf("critest ran in %v (%v); output in %s; the registry answered %d manifest requests",
		time.Since(start).Round(100*time.Millisecond), runErr, logPath, reg.manifestRequests())
	res, err := critest.ReadReport(report, focus)
	if err != nil {
		t.Fatalf("critest: %v (exit: %v); output:\n%s", err, runErr, tail(logPath, 80))
	}
	if len(res) == 0 {
		t.Fatalf("critest ran no spec matching %q; output:\n%s", focus, tail(logPath, 80))
	}
	markShimRaces(res, c.log.String())
	return res
}

// sandboxIDPattern matches a sandbox or container ID as containerd makes
// them (64 hex digits).
var sandboxIDPattern = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// markShimRaces sets ShimRace on each failed spec whose failure names a
// sandbox that containerd's log says it kept after losing the cleanup
// race with the shim's exit (shimRaceLeftSandbox, the rule scenario 2 of
// the end-to-end suite applies too): critest's "should fail RunPodSandbox
// and clean up when the NRI hook errors" then finds the failed sandbox
// still listed, on stock containerd as on nrinet.
func markShimRaces(res []critest.Spec, containerdLog string) {
	for i, r := range res {
		if r.State != "failed" {
			continue
		}
		for _, id := range sandboxIDPattern.FindAllString(r.Message, -1) {
			if shimRaceLeftSandbox(containerdLog, id) {
				res[i].Excused = shimRaceExcuse(id)
				break
			}
		}
	}
}

// shimRaceExcuse says why a failure markShimRaces found is not counted.
func shimRaceExcuse(id string) string {
	return "containerd kept sandbox " + id + " in state unknown after its shim exited during the cleanup (containerd's race, stock too)"
}

// busyboxList returns the applets the busybox binary has.
func busyboxList(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	return strings.Fields(string(out)), nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
