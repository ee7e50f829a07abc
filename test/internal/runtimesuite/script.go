package runtimesuite

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Build is what a runtime's build script printed: its
// <PREFIX>_{VERSION,NRI,SRC,BIN} lines.
type Build struct {
	// Version is the runtime's version, NRI what github.com/containerd/nri
	// it is built against (upstream or compat).
	Version, NRI string
	// Src is the prepared source tree, Bin the directory of its binaries.
	Src, Bin string
}

// RunScript runs the build script (a path) with env added to the
// environment and returns what it printed, reading the variables named
// prefix+"_VERSION" and so on. Its progress goes to the test's stderr with
// -v, else into the failure message.
func RunScript(ctx context.Context, t *testing.T, script, prefix string, env ...string) Build {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if testing.Verbose() {
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	t.Logf("%s took %v", script, time.Since(start).Round(time.Second))
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	b := Build{Version: vars[prefix+"_VERSION"], NRI: vars[prefix+"_NRI"], Src: vars[prefix+"_SRC"], Bin: vars[prefix+"_BIN"]}
	if b.Version == "" || b.NRI == "" || b.Src == "" || b.Bin == "" {
		t.Fatalf("%s printed %q; want %s_{VERSION,NRI,SRC,BIN}=...", script, stdout.String(), prefix)
	}
	return b
}

// GoCmd returns a go command to run in a runtime's source tree src, with
// the settings the build scripts use (no workspace, no VCS stamping).
func GoCmd(ctx context.Context, src string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cmp.Or(os.Getenv("GO"), "go"), args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// GoTest runs `go test -json` with flags on the package pkg (a path
// relative to src, such as ./internal/nri), then testArgs after -args if
// any, and returns what it reported. A failing test is for Compare to
// judge; go test failing otherwise (it could not run) fails t.
func GoTest(ctx context.Context, t *testing.T, src, pkg string, flags, testArgs []string) *Run {
	t.Helper()
	args := append([]string{"test", "-json"}, flags...)
	args = append(args, pkg)
	if len(testArgs) > 0 {
		args = append(append(args, "-args"), testArgs...)
	}
	cmd := GoCmd(ctx, src, args...)
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
	r, parseErr := ParseRun(stdout)
	if parseErr != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	if parseErr != nil {
		t.Fatalf("%v\n%s", parseErr, stderr.String())
	}
	if waitErr != nil && r.Package != OutcomeFail {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), waitErr, r.PackageOutput, stderr.String())
	}
	return r
}

// Compile builds pkg's test binary with flags, without running it.
func Compile(ctx context.Context, t *testing.T, src, pkg string, flags []string) {
	t.Helper()
	args := append(append([]string{"test"}, flags...), "-c", "-o", os.DevNull, pkg)
	start := time.Now()
	if out, err := GoCmd(ctx, src, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
}

// Summary counts a run's outcomes and lists the tests that did not pass.
func Summary(r *Run) string {
	count := map[string]int{}
	var notPassed []string
	for _, name := range slices.Sorted(maps.Keys(r.Tests)) {
		res := r.Tests[name]
		count[res.Outcome]++
		if res.Outcome != OutcomePass {
			notPassed = append(notPassed, fmt.Sprintf("\n  %s %s: %s", res.Outcome, name, res.Why))
		}
	}
	return fmt.Sprintf("package %s: %d tests passed, %d skipped, %d failed; subtests %d passed, %d skipped, %d failed%s",
		r.Package, count[OutcomePass], count[OutcomeSkip], count[OutcomeFail],
		r.Subtests[OutcomePass], r.Subtests[OutcomeSkip], r.Subtests[OutcomeFail], strings.Join(notPassed, ""))
}
