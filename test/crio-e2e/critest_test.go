package crioe2e

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/gobin"
)

// critest, cri-tools' CRI validation suite, run by TestCritest.
const (
	// critestGateEnv must be set, besides gateEnv, for TestCritest to run
	// (make critest-crio): it takes minutes.
	critestGateEnv = "NRINET_CRITEST"
	// critestFocusEnv is critest's -ginkgo.focus (default critestFocus).
	critestFocusEnv = "NRINET_CRITEST_FOCUS"
	critestFocus    = "NRI"
	// critestOutEnv names a directory for critest's output and reports,
	// and the summary (results.md).
	critestOutEnv = "NRINET_CRITEST_OUT"
	// critestTimeout bounds one critest run.
	critestTimeout = 20 * time.Minute
	// critestRequestTimeout is nri_plugin_request_timeout: critest's
	// synchronization specs hold their plugin's Synchronize answer for
	// 2 s, CRI-O's default timeout (as containerd's; docs/containerd.md).
	critestRequestTimeout = 10 * time.Second
)

// critestVariant is one CRI-O setup critest runs against.
type critestVariant struct {
	name string
	opts crioOptions
	// podnet starts nri-podnet, the pods' network in network_mode nri.
	podnet bool
	// reference is the variant whose passing specs must pass here too;
	// empty for the reference itself (results are only reported).
	reference string
}

var critestVariants = []critestVariant{
	{name: "stock", opts: crioOptions{nri: "upstream", nriRequestTimeout: critestRequestTimeout}},
	{name: "compat", opts: crioOptions{nri: "compat", mode: "cni", nriRequestTimeout: critestRequestTimeout}, reference: "stock"},
	{name: "compat-nri-podnet", podnet: true, reference: "stock",
		opts: crioOptions{nri: "compat", mode: "nri", required: []string{"podnet"}, nriRequestTimeout: critestRequestTimeout}},
}

// TestCritest runs critest v1.37.0's specs that match NRINET_CRITEST_FOCUS
// (default "NRI") against stock CRI-O and CRI-O on nrinet in network_mode
// cni and nri (with nri-podnet), all pulling critest's test image from the
// suite's registry in place of registry.k8s.io, and reports each spec's
// outcome per runtime. Every spec that passes on stock CRI-O must pass on
// nrinet, in both modes. See docs/crio.md, "critest".
func TestCritest(t *testing.T) {
	skipUnlessEnabled(t)
	if os.Getenv(critestGateEnv) == "" {
		t.Skipf("set %s=1 (make critest-crio) to run critest", critestGateEnv)
	}
	bin := os.Getenv("NRINET_CRITEST_BIN")
	if bin == "" {
		var err error
		if bin, err = gobin.InstallTest(gobin.Dir("nrinet-critest", crictlVersion), "sigs.k8s.io/cri-tools", "cmd/critest", crictlVersion); err != nil {
			t.Fatal(err)
		}
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
	var names []string
	for _, v := range critestVariants {
		names = append(names, v.name)
		t.Run(v.name, func(t *testing.T) {
			start := time.Now()
			res := runCritest(t, v, bin, focus, out)
			times[v.name] = time.Since(start)
			results[v.name] = res
			for _, r := range res {
				t.Logf("%-7s %6.1fs  %s%s", r.State, r.RunTime.Seconds(), r.Name, r.Short())
			}
			if v.reference == "" {
				return
			}
			problems, notes := critest.Check(res, results[v.reference], critest.SynchronizationSpecs, focus)
			for _, n := range notes {
				t.Logf("critest: %s", n)
			}
			for _, p := range problems {
				t.Errorf("critest: %s", p)
			}
		})
	}
	summary := critest.Summary(names, results, times)
	t.Logf("critest %s on CRI-O, focus %q:\n%s", crictlVersion, focus, summary)
	if os.Getenv(critestOutEnv) != "" {
		if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runCritest starts CRI-O as v says, runs critest against it and returns
// the outcome of each spec that matched focus.
func runCritest(t *testing.T, v critestVariant, bin, focus, out string) []critest.Spec {
	c := startCrio(t, v.opts)
	if v.podnet {
		c.startPodnet()
	}
	c.waitNetworkReady(true)
	report := filepath.Join(out, "crio-"+v.name+".json")
	logPath := filepath.Join(out, "crio-"+v.name+".log")
	c.writeFile("crictl.yaml", "runtime-endpoint: unix://"+c.sock+"\nimage-endpoint: unix://"+c.sock+"\ntimeout: 20\n")
	start := time.Now()
	runErr := critest.Run(t.Context(), critest.Options{
		Bin: bin, Endpoint: "unix://" + c.sock, NRISocket: c.nriSock, CrictlConfig: filepath.Join(c.dir, "crictl.yaml"),
		Focus: focus, Report: report, Log: logPath, Dir: c.dir, Timeout: critestTimeout,
	})
	t.Logf("critest ran in %v (%v); output in %s", time.Since(start).Round(100*time.Millisecond), runErr, logPath)
	res, err := critest.ReadReport(report, focus)
	if err != nil || len(res) == 0 {
		b, _ := os.ReadFile(logPath)
		lines := strings.Split(string(b), "\n")
		t.Fatalf("critest ran no spec matching %q (%v, exit: %v); output ends:\n%s", focus, err, runErr, strings.Join(lines[max(0, len(lines)-80):], "\n"))
	}
	return res
}
