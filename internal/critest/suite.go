package critest

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/gobin"
)

// The environment of make critest and make critest-crio.
const (
	// GateEnv must be set for Suite to run: it takes minutes.
	GateEnv = "NRINET_CRITEST"
	// FocusEnv is critest's -ginkgo.focus (default Config.Focus, else
	// DefaultFocus).
	FocusEnv     = "NRINET_CRITEST_FOCUS"
	DefaultFocus = "NRI"
	// OutEnv names a directory for critest's output and reports, and the
	// summary (results.md); by default they go to the test's temporary
	// directory and the summary to the test log only.
	OutEnv = "NRINET_CRITEST_OUT"
	// BinEnv names a critest binary to use instead of installing one.
	BinEnv = "NRINET_CRITEST_BIN"
	// RunTimeout bounds one critest run.
	RunTimeout = 20 * time.Minute
	// RequestTimeout is the NRI plugin request timeout the suites give
	// runtimes for critest: its synchronization specs hold their plugin's
	// Synchronize answer for 2 s, which is containerd's and CRI-O's
	// default timeout, so with the default the runtime drops the plugin
	// and the specs skip (stock and nrinet alike).
	RequestTimeout = 10 * time.Second
)

// Variant is one runtime setup critest runs against.
type Variant struct {
	Name string
	// Strict: the SynchronizationSpecs must pass, and every spec that
	// passed on the variant named Reference (or, when that did not run,
	// every spec); else results are only reported.
	Strict    bool
	Reference string
}

// Target is a runtime a suite started for a variant.
type Target struct {
	// Endpoint is the CRI socket (unix://...), NRISocket the NRI socket.
	Endpoint, NRISocket string
	// CrictlConfig is passed as critest's -config; Dir is its working
	// directory.
	CrictlConfig, Dir string
	// TestImagesFile, if set, is passed as critest's -test-images-file.
	TestImagesFile string
	// Excuse, if set, marks the failures the runtime's own known defects
	// explain (Spec.Excused), after the run.
	Excuse func(specs []Spec)
	// Done, if set, is called after the run (to log what the runtime's
	// helpers saw).
	Done func(t *testing.T)
}

// Config is what Suite needs of an end-to-end suite.
type Config struct {
	// Version is critest's (cri-tools') version to install.
	Version string
	// Make is the make target that runs it, for the skip message.
	Make string
	// Prefix starts the names of the reports and logs in the output
	// directory.
	Prefix string
	// Focus is critest's -ginkgo.focus when FocusEnv is empty (default
	// DefaultFocus).
	Focus    string
	Variants []Variant
	// Start starts the runtime of v for t (t's cleanup stops it).
	Start func(t *testing.T, v Variant) Target
}

// Suite runs critest's specs that match FocusEnv (default c.Focus, else
// DefaultFocus)
// against each variant in order, one subtest each, judges the strict ones
// (Check) and logs, and with OutEnv writes, the per-spec table (Summary).
// It skips unless GateEnv is set.
func Suite(t *testing.T, c Config) {
	if os.Getenv(GateEnv) == "" {
		t.Skipf("set %s=1 (make %s) to run critest", GateEnv, c.Make)
	}
	bin := os.Getenv(BinEnv)
	if bin == "" {
		start := time.Now()
		var err error
		if bin, err = gobin.InstallTest(gobin.Dir("nrinet-critest", c.Version), "sigs.k8s.io/cri-tools", "cmd/critest", c.Version); err != nil {
			t.Fatal(err)
		}
		t.Logf("critest %s at %s (%v)", c.Version, bin, time.Since(start).Round(time.Millisecond))
	}
	focus := cmp.Or(os.Getenv(FocusEnv), c.Focus, DefaultFocus)
	out := os.Getenv(OutEnv)
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	results := map[string][]Spec{}
	times := map[string]time.Duration{}
	var names []string
	for _, v := range c.Variants {
		names = append(names, v.Name)
		t.Run(v.Name, func(t *testing.T) {
			start := time.Now()
			res := runVariant(t, c, v, bin, focus, out)
			times[v.Name] = time.Since(start)
			results[v.Name] = res
			for _, r := range res {
				t.Logf("%-7s %6.1fs  %s%s", r.State, r.RunTime.Seconds(), r.Name, r.Short())
			}
			if !v.Strict {
				return
			}
			problems, notes := Check(res, results[v.Reference], SynchronizationSpecs, focus)
			for _, n := range notes {
				t.Logf("critest: %s", n)
			}
			for _, p := range problems {
				t.Errorf("critest: %s", p)
			}
		})
	}
	summary := Summary(names, results, times)
	t.Logf("critest %s, focus %q:\n%s", c.Version, focus, summary)
	if os.Getenv(OutEnv) != "" {
		if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runVariant starts the variant's runtime, runs critest against it and
// returns the outcome of each spec that matched focus.
func runVariant(t *testing.T, c Config, v Variant, bin, focus, out string) []Spec {
	target := c.Start(t, v)
	report := filepath.Join(out, c.Prefix+v.Name+".json")
	logPath := filepath.Join(out, c.Prefix+v.Name+".log")
	start := time.Now()
	runErr := Run(t.Context(), Options{
		Bin: bin, Endpoint: target.Endpoint, NRISocket: target.NRISocket, CrictlConfig: target.CrictlConfig,
		Focus: focus, Report: report, Log: logPath, Dir: target.Dir, TestImagesFile: target.TestImagesFile, Timeout: RunTimeout,
	})
	t.Logf("critest ran in %v (%v); output in %s", time.Since(start).Round(100*time.Millisecond), runErr, logPath)
	if target.Done != nil {
		target.Done(t)
	}
	res, err := ReadReport(report, focus)
	if err != nil || len(res) == 0 {
		t.Fatalf("critest ran no spec matching %q (%v, exit: %v); output ends:\n%s", focus, err, runErr, tail(logPath, 80))
	}
	if target.Excuse != nil {
		target.Excuse(res)
	}
	return res
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
