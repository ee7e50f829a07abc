package containerde2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
	// critestTestImage is critest's default test image
	// (framework.DefaultLinuxContainerImage), which the test's registry
	// serves in place of registry.k8s.io.
	critestTestImageRepo = "e2e-test-images/busybox"
	critestTestImageTag  = "1.29-2"
	critestRegistryHost  = "registry.k8s.io"
)

// critestMustPass are the specs that must pass on containerd on nrinet:
// the two that critest skips as a discrepancy when a container created
// while a plugin joins is lost ("containerd loses containers created
// while a late-joining plugin's Synchronize is in progress").
var critestMustPass = []string{
	"should receive a callback for container created during the Synchronize call",
	"should receive information about all containers without the race condition during initialization",
}

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

	results := map[string][]specResult{}
	times := map[string]time.Duration{}
	for _, v := range critestVariants {
		t.Run(v.name, func(t *testing.T) {
			start := time.Now()
			res := runCritest(t, v, bin, img, focus, out)
			times[v.name] = time.Since(start)
			results[v.name] = res
			for _, r := range res {
				t.Logf("%-7s %6.1fs  %s%s", r.State, r.RunTime.Seconds(), r.Name, r.message())
			}
			if v.strict {
				checkCritest(t, res, results[v.reference], focus)
			}
		})
	}
	summary := critestSummary(results, times)
	t.Logf("critest %s, focus %q:\n%s", crictlVersion, focus, summary)
	if os.Getenv(critestOutEnv) != "" {
		if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runCritest starts containerd as v says, with the registry, runs critest
// against it and returns the outcome of each spec that matched focus.
func runCritest(t *testing.T, v critestVariant, bin string, img v1.Image, focus, out string) []specResult {
	reg := startRegistry(t, map[string]v1.Image{critestTestImageRepo + ":" + critestTestImageTag: img})
	hosts := filepath.Join(t.TempDir(), "certs.d")
	reg.writeHosts(t, hosts, critestRegistryHost)
	opts := v.opts
	opts.registryConfigPath = hosts
	c := startContainerd(t, opts)
	if v.podnet {
		podnetPlugin.start(c)
		c.waitNetworkReady(true)
	}
	report := filepath.Join(out, v.name+".json")
	logPath := filepath.Join(out, v.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ep := "unix://" + c.sock
	args := []string{
		"-runtime-endpoint", ep, "-image-endpoint", ep, "-config", c.crictlConfig,
		"-nri-socket", c.nriSock,
		"-ginkgo.focus", focus, "-ginkgo.no-color", "-ginkgo.v", "-ginkgo.json-report", report,
		"-ginkgo.timeout", critestTimeout.String(),
	}
	ctx, cancel := context.WithTimeout(t.Context(), critestTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir // critest looks for crictl.yaml beside itself and in its working directory too
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("critest ran in %v (%v); output in %s; the registry answered %d manifest requests",
		time.Since(start).Round(100*time.Millisecond), cmd.ProcessState, logPath, reg.manifestRequests())
	res, err := readGinkgoReport(report, focus)
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
func markShimRaces(res []specResult, containerdLog string) {
	for i, r := range res {
		if r.State != "failed" {
			continue
		}
		for _, id := range sandboxIDPattern.FindAllString(r.Message, -1) {
			if shimRaceLeftSandbox(containerdLog, id) {
				res[i].ShimRace = id
				break
			}
		}
	}
}

// checkCritest fails the test for each spec of res that did not pass
// while it passed in reference (every spec, with no reference), and for
// each critestMustPass spec that matched focus and did not pass.
func checkCritest(t *testing.T, res, reference []specResult, focus string) {
	t.Helper()
	passedBefore := map[string]bool{}
	for _, r := range reference {
		passedBefore[r.Name] = r.State == "passed"
	}
	for _, r := range res {
		if r.State == "passed" || r.State == "skipped" && r.Message == "" {
			continue // skipped without a message: not selected
		}
		if r.ShimRace != "" {
			t.Logf("critest: %s failed because containerd kept sandbox %s in state unknown after its shim exited during the cleanup (containerd's race, stock too; not counted)", r.Name, r.ShimRace)
			continue
		}
		if reference == nil && r.State != "skipped" || passedBefore[r.Name] {
			t.Errorf("critest: %s %s%s", r.State, r.Name, r.message())
		}
	}
	re := regexp.MustCompile(focus)
	for _, want := range critestMustPass {
		i := slices.IndexFunc(res, func(r specResult) bool { return strings.HasSuffix(r.Name, want) })
		switch {
		case i < 0:
			if re.MatchString("[k8s.io] NRI plugin synchronization " + want) {
				t.Errorf("critest did not run %q", want)
			}
		case res[i].State != "passed":
			t.Errorf("critest: %q %s%s; it must pass on nrinet", want, res[i].State, res[i].message())
		}
	}
}

// specResult is one spec's outcome in critest's ginkgo report.
type specResult struct {
	// Name is the spec's full text: its containers' texts and its own.
	Name    string
	State   string
	RunTime time.Duration
	// Message is the failure or skip message.
	Message string
	// ShimRace is the sandbox a failure names that containerd's log says
	// it kept after its own cleanup lost the race with the shim's exit
	// (markShimRaces); such a failure is reported, not counted.
	ShimRace string
}

func (r specResult) message() string {
	if r.Message == "" || r.State == "passed" {
		return ""
	}
	m, _, _ := strings.Cut(r.Message, "\n")
	return ": " + m
}

// readGinkgoReport reads a ginkgo v2 JSON report (-ginkgo.json-report)
// and returns its It specs whose full text matches focus, in the order
// they ran.
func readGinkgoReport(path, focus string) ([]specResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
			RunTime                 time.Duration
			StartTime               time.Time
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("ginkgo report %s: %w", path, err)
	}
	re, err := regexp.Compile(focus)
	if err != nil {
		return nil, err
	}
	type timed struct {
		specResult
		start time.Time
	}
	var specs []timed
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
			if !re.MatchString(name) {
				continue
			}
			specs = append(specs, timed{specResult{Name: name, State: s.State, RunTime: s.RunTime, Message: s.Failure.Message}, s.StartTime})
		}
	}
	slices.SortStableFunc(specs, func(a, b timed) int { return a.start.Compare(b.start) })
	out := make([]specResult, len(specs))
	for i, s := range specs {
		out[i] = s.specResult
	}
	return out, nil
}

// critestSummary is a Markdown table of every spec's outcome per
// variant, then each variant's totals and time.
func critestSummary(results map[string][]specResult, times map[string]time.Duration) string {
	var names []string
	var variants []string
	for _, v := range critestVariants {
		if _, ok := results[v.name]; ok {
			variants = append(variants, v.name)
		}
	}
	state := map[string]map[string]string{}
	for _, v := range variants {
		for _, r := range results[v] {
			if state[r.Name] == nil {
				state[r.Name] = map[string]string{}
				names = append(names, r.Name)
			}
			state[r.Name][v] = r.State
			if r.ShimRace != "" {
				state[r.Name][v] += " (containerd's shim race)"
			}
		}
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "| spec | %s |\n|---|%s\n", strings.Join(variants, " | "), strings.Repeat("---|", len(variants)))
	for _, n := range names {
		row := make([]string, len(variants))
		for i, v := range variants {
			row[i] = cmp.Or(state[n][v], "-")
		}
		name := strings.ReplaceAll(strings.TrimPrefix(n, "[k8s.io] "), "|", `\|`)
		fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(row, " | "))
	}
	b.WriteString("\n")
	for _, v := range variants {
		count := map[string]int{}
		for _, r := range results[v] {
			count[r.State]++
		}
		fmt.Fprintf(&b, "- %s: passed %d, failed %d, skipped %d (critest and containerd's start, %v)\n", v, count["passed"], len(results[v])-count["passed"]-count["skipped"], count["skipped"], times[v].Round(time.Second))
	}
	return b.String()
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
