package containerde2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// gateEnv must be set for the suite to run: it builds containerd (minutes
// the first time) and runs real pods.
const gateEnv = "NRINET_CONTAINERD_E2E"

// Image references. The pause image's is the CRI configuration's sandbox
// image (pinned_images.sandbox), so containerd never pulls one.
const (
	pauseRef   = "localhost/nrinet-e2e/pause:1"
	busyboxRef = "localhost/nrinet-e2e/busybox:1"
)

// suiteEnv holds what TestMain prepared once for every test: the helper
// binaries, the image archives and the tools. It is written by TestMain
// only, before any test runs.
type suiteEnv struct {
	// dir holds the binaries and image archives; TestMain removes it.
	dir string
	// pauseTar and busyboxTar are the OCI image archives;
	// integrationPauseTar and integrationBusyboxTar hold the same images
	// under the names containerd's integration tests use.
	pauseTar, busyboxTar                       string
	integrationPauseTar, integrationBusyboxTar string
	// stubAdjuster and pluginAdjuster are the adjuster plugins on
	// upstream's stub and on nrinet's plugin package; podnet and nriCNI
	// are cmd/nri-podnet and cmd/nri-cni.
	stubAdjuster, pluginAdjuster, podnet, nriCNI string
	// syncObserver is cmd/nri-sync-observer, the plugin that joins again
	// and again (TestLateJoin).
	syncObserver string
	// nrinetd is cmd/nrinetd (the benchmark's fourth runtime).
	nrinetd string
	// crictl and cniBin are crictl and the CNI reference plugins' directory.
	crictl, cniBin string
	// builds are the containerd builds, made or found by hack/containerd.sh
	// the first time a test asks for one.
	builds *builds
}

var env suiteEnv

func TestMain(m *testing.M) {
	// The runbook test runs this binary as systemctl (systemctl_test.go).
	if filepath.Base(os.Args[0]) == systemctlName {
		os.Exit(systemctlMain(os.Args[1:]))
	}
	os.Exit(testutil.GatedMain(m, gateEnv, "ctrd-e2e", setup, nil))
}

// setup builds the helper binaries and the images into dir and finds the
// tools.
func setup(dir string) error {
	start := time.Now()
	env = suiteEnv{dir: dir, builds: &builds{byMode: map[string]*build{}}}
	for _, tool := range []string{"runc", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: the suite needs it (Debian package %s)", tool, map[string]string{"runc": "runc", "ip": "iproute2"}[tool])
		}
	}
	// This module's commands, in one go build; pause without cgo so that
	// the image needs no C library.
	if err := testutil.GoBuild(".", dir, []string{"CGO_ENABLED=0"}, "./cmd/pause"); err != nil {
		return err
	}
	if err := testutil.GoBuild(".", dir, nil, "./cmd/nri-stub-adjuster", "./cmd/nri-plugin-adjuster", "./cmd/nri-sync-observer"); err != nil {
		return err
	}
	// nrinet's commands, from the root module (their dependencies are in
	// its go.sum, not this module's).
	if err := testutil.GoBuild(filepath.Join("..", ".."), dir, nil, "./cmd/nri-podnet", "./cmd/nri-cni", "./cmd/nrinetd"); err != nil {
		return err
	}
	env.stubAdjuster = filepath.Join(dir, "nri-stub-adjuster")
	env.pluginAdjuster = filepath.Join(dir, "nri-plugin-adjuster")
	env.syncObserver = filepath.Join(dir, "nri-sync-observer")
	env.podnet, env.nriCNI = filepath.Join(dir, "nri-podnet"), filepath.Join(dir, "nri-cni")
	env.nrinetd = filepath.Join(dir, "nrinetd")

	env.pauseTar, env.busyboxTar = filepath.Join(dir, "pause.tar"), filepath.Join(dir, "busybox.tar")
	if err := writePauseImage(env.pauseTar, pauseRef, filepath.Join(dir, "pause")); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	busybox, err := testutil.StaticBusybox()
	if err != nil {
		return err
	}
	if err := writeBusyboxImage(env.busyboxTar, busyboxRef, busybox); err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}
	env.integrationPauseTar, env.integrationBusyboxTar = filepath.Join(dir, "integration-pause.tar"), filepath.Join(dir, "integration-busybox.tar")
	if err := writePauseImage(env.integrationPauseTar, integrationPauseRef, filepath.Join(dir, "pause")); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	if err := writeBusyboxImage(env.integrationBusyboxTar, integrationBusyboxRef, busybox); err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}

	env.crictl = os.Getenv("NRINET_CRICTL")
	if env.crictl == "" {
		if env.crictl, err = gobin.Install(gobin.Dir("nrinet-crictl", pins.CRITools), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools); err != nil {
			return err
		}
	}
	env.cniBin = os.Getenv("NRINET_CNI_BIN")
	if env.cniBin == "" {
		env.cniBin = gobin.Dir("nrinet-cni-plugins", pins.CNIPlugins)
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(env.cniBin, p)); err != nil {
			return fmt.Errorf("CNI plugin %s not in %s (set NRINET_CNI_BIN, or run .ci/run once): %v", p, env.cniBin, err)
		}
	}
	fmt.Fprintf(os.Stderr, "containerd-e2e: helpers and images built in %v\n", time.Since(start).Round(10*time.Millisecond))
	return nil
}

// A build is containerd built by hack/containerd.sh.
type build struct {
	// nri is what hack/containerd.sh built it against: upstream (stock
	// containerd) or compat (containerd on nrinet).
	nri string
	// bin holds containerd, containerd-shim-runc-v2 and ctr; src is the
	// source tree they were built from.
	bin, src string
	// version is containerd's version.
	version string
	err     error
}

// builds runs hack/containerd.sh once per NRINET_CONTAINERD_NRI value.
type builds struct {
	mu     sync.Mutex // guards byMode; held while the script runs
	byMode map[string]*build
}

// get returns the build for nri ("upstream" or "compat"), running
// hack/containerd.sh the first time; with the cache filled (make
// e2e-containerd builds both first) that takes milliseconds.
func (b *builds) get(ctx context.Context, t testing.TB, nri string) *build {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if got, ok := b.byMode[nri]; ok {
		if got.err != nil {
			t.Fatal(got.err)
		}
		return got
	}
	got := runContainerdScript(ctx, nri)
	b.byMode[nri] = got
	if got.err != nil {
		t.Fatal(got.err)
	}
	return got
}

// runContainerdScript runs hack/containerd.sh with NRINET_CONTAINERD_NRI=nri
// and reads what it printed.
func runContainerdScript(ctx context.Context, nri string) *build {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "hack", "containerd.sh"))
	cmd.Env = append(os.Environ(), "NRINET_CONTAINERD_NRI="+nri)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return &build{nri: nri, err: fmt.Errorf("hack/containerd.sh (NRINET_CONTAINERD_NRI=%s): %v\n%s", nri, err, stderr.String())}
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	b := &build{nri: vars["NRINET_CONTAINERD_NRI"], bin: vars["NRINET_CONTAINERD_BIN"], src: vars["NRINET_CONTAINERD_SRC"], version: vars["NRINET_CONTAINERD_VERSION"]}
	if b.nri != nri || b.bin == "" || b.src == "" || b.version == "" {
		b.err = fmt.Errorf("hack/containerd.sh (NRINET_CONTAINERD_NRI=%s) printed %q; want NRINET_CONTAINERD_{NRI,BIN,SRC,VERSION}=...", nri, stdout.String())
	}
	return b
}

// skipUnlessEnabled skips a test unless the suite runs (root and
// NRINET_CONTAINERD_E2E set); in CI (CI=true) a missing privilege fails.
func skipUnlessEnabled(t testing.TB) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	if os.Getenv(gateEnv) == "" {
		t.Skipf("set %s=1 (make e2e-containerd) to build containerd and run pods with it", gateEnv)
	}
}
