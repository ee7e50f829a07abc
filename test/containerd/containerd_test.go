package containerd_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

var update = flag.Bool("update", false, "record testdata/baseline.json from this run (stock containerd only)")

const baselineFile = "testdata/baseline.json"

// A suite is one of containerd's packages whose tests run against the
// github.com/containerd/nri that hack/containerd.sh built containerd with.
type suite struct {
	// pkg is the package's path inside containerd's module.
	pkg string
	// why says why the package is chosen.
	why string
	// root: its tests take containerd's -test.root flag, which enables
	// the tests that need root (pkg/testutil.RequiresRoot).
	root bool
	// compileOnly: the test binary is built, not run.
	compileOnly bool
}

// suites are the packages of containerd v2.4.2 that import
// github.com/containerd/nri (found with `grep -rl containerd/nri
// --include=*.go`, vendor/ left out), and those that import containerd's
// own NRI packages (internal/nri, internal/cri/nri). plugins/nri, which
// imports internal/nri too, has no tests; the containerd binary links it.
var suites = []suite{
	{pkg: "internal/nri", why: "imports nri pkg/adaptation and pkg/api: containerd's NRI service, its domains, metrics and deprecations"},
	{pkg: "internal/cri/nri", why: "imports nri pkg/api: the CRI side of NRI (pod and container views, api.FromOCI*)"},
	{pkg: "internal/cri/server/podsandbox", why: "imports the nri v0.1 client and types/v1 (nri.New, InvokeWithSandbox)", root: true},
	{pkg: "internal/cri/server", why: "imports internal/nri and internal/cri/nri: the CRI service that calls NRI"},
	{pkg: "plugins/cri", why: "imports internal/nri: the CRI plugin's NRI wiring and configuration"},
	{pkg: "internal/cri/config", why: "the CRI configuration, where nrinet's patches add network_mode"},
	{pkg: "internal/cri/store/sandbox", why: "the sandbox store, where nrinet's patches keep the pod's NRI network"},
	{pkg: "integration", why: "imports nri pkg/api and pkg/stub (NRI plugins written on upstream's stub); " +
		"its tests need a running containerd, so it is only compiled", compileOnly: true},
}

// baseline is testdata/baseline.json: the outcome of every top-level test
// of each suite on stock containerd.
type baseline struct {
	// Containerd is the version the outcomes were recorded with.
	Containerd string `json:"containerd"`
	// Recorded describes the run: Go version, platform, user, cgroup mode.
	Recorded string `json:"recorded"`
	// Packages maps a suite's pkg to its tests' results.
	Packages map[string]map[string]result `json:"packages"`
}

// build is what hack/containerd.sh printed.
type build struct {
	version, nri, src, bin string
}

func TestContainerdNRIPackages(t *testing.T) {
	if os.Getenv("NRINET_CONTAINERD_TEST") == "" && !*update {
		t.Skip("set NRINET_CONTAINERD_TEST=1 (make containerd-test) to build containerd and run its NRI unit tests")
	}
	testutil.SkipUnlessRoot(t)
	ctx := t.Context()

	b := runScript(ctx, t)
	t.Logf("containerd %s, nri %s, source %s", b.version, b.nri, b.src)
	if *update && b.nri != "upstream" {
		t.Fatalf("-update records stock containerd's outcomes: run it with NRINET_CONTAINERD_NRI=upstream, not %s", b.nri)
	}
	var base baseline
	if !*update {
		data, err := os.ReadFile(baselineFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &base); err != nil {
			t.Fatalf("%s: %v", baselineFile, err)
		}
		if base.Containerd != b.version {
			t.Fatalf("%s was recorded with containerd %s, this is %s: record it again with -update on stock containerd",
				baselineFile, base.Containerd, b.version)
		}
	}
	if b.nri == "compat" {
		t.Run("go.mod", func(t *testing.T) {
			diff, err := os.ReadFile(filepath.Join(filepath.Dir(b.src), "go.mod.diff"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range checkGoModDiff(string(diff)) {
				t.Errorf("containerd's go.mod with nrinet: %s", p)
			}
		})
	}
	added := map[string]bool{}
	if b.nri == "compat" {
		var err error
		if added, err = addedTests(filepath.Join("..", "..", "hack", "containerd-patches")); err != nil {
			t.Fatal(err)
		}
	}
	recorded := map[string]map[string]result{}
	for _, s := range suites {
		t.Run(s.pkg, func(t *testing.T) {
			if s.compileOnly {
				compile(ctx, t, b.src, s)
				return
			}
			r := goTest(ctx, t, b.src, s)
			recorded[s.pkg] = r.Tests
			t.Logf("%s: %s", s.pkg, s.why)
			t.Logf("%s", summary(r))
			if *update {
				if r.Package != outcomePass {
					t.Logf("package %s: %s\n%s", s.pkg, r.Package, r.PackageOutput)
				}
				return
			}
			if r.Package == "" || len(r.Tests) == 0 {
				t.Fatalf("go test %s reported no tests (package %q):\n%s", s.pkg, r.Package, r.PackageOutput)
			}
			for _, d := range compare(base.Packages[s.pkg], r.Tests, added) {
				if d.allowed {
					t.Logf("%s %s", d.test, d.msg)
					continue
				}
				t.Errorf("%s %s\n%s", d.test, d.msg, r.Output[d.test])
			}
		})
	}
	if *update && !t.Failed() {
		writeBaseline(t, b, recorded)
	}
}

// runScript runs hack/containerd.sh and returns what it printed. Its
// progress goes to the test's stderr with -v, else into the failure message.
func runScript(ctx context.Context, t *testing.T) build {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "hack", "containerd.sh"))
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if testing.Verbose() {
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/containerd.sh: %v\n%s", err, stderr.String())
	}
	t.Logf("hack/containerd.sh took %v", time.Since(start).Round(time.Second))
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	b := build{
		version: vars["NRINET_CONTAINERD_VERSION"],
		nri:     vars["NRINET_CONTAINERD_NRI"],
		src:     vars["NRINET_CONTAINERD_SRC"],
		bin:     vars["NRINET_CONTAINERD_BIN"],
	}
	if b.version == "" || b.nri == "" || b.src == "" || b.bin == "" {
		t.Fatalf("hack/containerd.sh printed %q; want NRINET_CONTAINERD_{VERSION,NRI,SRC,BIN}=...", stdout.String())
	}
	return b
}

// goCmd returns a go command to run in containerd's source tree src, with
// the settings hack/containerd.sh uses (no workspace, no VCS stamping).
func goCmd(ctx context.Context, src string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cmp.Or(os.Getenv("GO"), "go"), args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// goTest runs the suite's tests the way containerd's own `make test` and
// `make root-test` do (with -race on amd64), in vendor mode.
func goTest(ctx context.Context, t *testing.T, src string, s suite) *run {
	t.Helper()
	args := []string{"test", "-mod=vendor", "-trimpath", "-count=1", "-timeout=10m", "-json"}
	if runtime.GOARCH == "amd64" {
		args = append(args, "-race")
	}
	args = append(args, "./"+s.pkg)
	if s.root {
		args = append(args, "-args", "-test.root")
	}
	cmd := goCmd(ctx, src, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	r, parseErr := parseRun(stdout)
	if parseErr != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	if parseErr != nil {
		t.Fatalf("%v\n%s", parseErr, stderr.String())
	}
	// A failing test makes go test exit 1; that is for compare to judge.
	// Anything else (go test could not run) fails here.
	if waitErr != nil && r.Package != outcomeFail {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), waitErr, r.PackageOutput, stderr.String())
	}
	return r
}

// compile builds the suite's test binary without running it.
func compile(ctx context.Context, t *testing.T, src string, s suite) {
	t.Helper()
	t.Logf("%s: %s", s.pkg, s.why)
	args := []string{"test", "-mod=vendor", "-trimpath", "-c", "-o", os.DevNull, "./" + s.pkg}
	start := time.Now()
	if out, err := goCmd(ctx, src, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
}

// summary counts a run's outcomes and lists the tests that did not pass.
func summary(r *run) string {
	count := map[string]int{}
	var notPassed []string
	for _, name := range slices.Sorted(maps.Keys(r.Tests)) {
		res := r.Tests[name]
		count[res.Outcome]++
		if res.Outcome != outcomePass {
			notPassed = append(notPassed, fmt.Sprintf("\n  %s %s: %s", res.Outcome, name, res.Why))
		}
	}
	return fmt.Sprintf("package %s: %d tests passed, %d skipped, %d failed; subtests %d passed, %d skipped, %d failed%s",
		r.Package, count[outcomePass], count[outcomeSkip], count[outcomeFail],
		r.Subtests[outcomePass], r.Subtests[outcomeSkip], r.Subtests[outcomeFail], strings.Join(notPassed, ""))
}

// writeBaseline records the outcomes of this run, on stock containerd, as
// the baseline.
func writeBaseline(t *testing.T, b build, recorded map[string]map[string]result) {
	t.Helper()
	goVersion, err := goCmd(t.Context(), b.src, "env", "GOVERSION").Output()
	if err != nil {
		t.Fatalf("go env GOVERSION: %v", err)
	}
	cgroup := "cgroup v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cgroup = "cgroup v2"
	}
	base := baseline{
		Containerd: b.version,
		Recorded: fmt.Sprintf("stock containerd (NRINET_CONTAINERD_NRI=upstream), %s, %s/%s, root, %s",
			strings.TrimSpace(string(goVersion)), runtime.GOOS, runtime.GOARCH, cgroup),
		Packages: recorded,
	}
	data, err := json.MarshalIndent(base, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(baselineFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", baselineFile)
}
