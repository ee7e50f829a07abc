package cni_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/runtime"
)

// startSocketRuntime starts a runtime that accepts plugins on sock and
// launches none. The returned function stops it (also done when the test
// ends).
func startSocketRuntime(t *testing.T, sock string, opts ...runtime.Option) (*runtime.Runtime, func()) {
	t.Helper()
	logger, _ := newLogger(t)
	base := []runtime.Option{runtime.WithSocketPath(sock), runtime.WithPluginPath(""), runtime.WithLogger(logger)}
	rt, err := runtime.New("nrcni-test-runtime", "v0.0.1", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt.Stop(ctx)
	}
	t.Cleanup(stop)
	return rt, stop
}

// waitJoined waits until rt lists 10-cni, failing at once if the plugin
// process exits.
func waitJoined(t *testing.T, rt *runtime.Runtime, exited <-chan struct{}, out *logBuffer, what string) {
	t.Helper()
	if err := testutil.Poll(20*time.Second, 10*time.Millisecond, func() error {
		select {
		case <-exited:
			return testutil.Abort(errors.New("nri-cni exited instead of joining"))
		default:
		}
		return testutil.Until("nri-cni to join", func() bool { return joined(rt) })()
	}); err != nil {
		t.Fatalf("%s: %v:\n%s", what, err, out)
	}
}

// TestNRICNI_RejoinsRestartedRuntime: nri-cni started by hand stays up
// when the runtime stops and joins the runtime that starts next on the
// same socket.
func TestNRICNI_RejoinsRestartedRuntime(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	dir, err := os.MkdirTemp("", "nrcni-ext-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nri.sock")
	// Only the configuration is loaded: no pod is run, so fake CNI
	// plugins that answer VERSION do.
	tn := &testNet{name: "nrinet-test", bridge: randName(), cniVersion: "1.0.0",
		confDir: t.TempDir(), dataDir: t.TempDir(), cacheDir: t.TempDir(),
		binDir: fakePluginDir(t, "bridge", "host-local", "portmap", "loopback")}
	tn.writeConflist(t, "10-nrinet-test.conflist", "198.19.0.0/24")
	cfgFile := filepath.Join(dir, "cni.json")
	writeJSON(t, cfgFile, tn.config())

	rt, stop := startSocketRuntime(t, sock)
	out := &logBuffer{}
	cmd := exec.Command(nriCNIBinary, "-config", cfgFile, "-socket", sock, "-verbose")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	})
	waitJoined(t, rt, exited, out, "first runtime")
	stop()
	rt, _ = startSocketRuntime(t, sock)
	waitJoined(t, rt, exited, out, "restarted runtime")
}

// TestNRICNI_WaitsForNetworkConfig: nri-cni started by hand with an empty
// CNI configuration directory does not exit: it says that it is waiting,
// and does not connect, so the runtime, which requires it, reports the
// network not ready. Once a conflist is written, nri-cni joins, and the
// network is ready.
func TestNRICNI_WaitsForNetworkConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	dir, err := os.MkdirTemp("", "nrcni-wait-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nri.sock")
	cfg := loaderEnv(t)
	cfg.ConfDir = filepath.Join(dir, "net.d") // not even there yet
	cfgFile := filepath.Join(dir, "cni.json")
	writeJSON(t, cfgFile, cfg)

	rt, _ := startSocketRuntime(t, sock, runtime.WithRequiredNetworkPlugins("cni"))
	out := &logBuffer{}
	cmd := exec.Command(nriCNIBinary, "-config", cfgFile, "-socket", sock)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	})
	want := "waiting for a CNI network configuration"
	if err := testutil.Poll(20*time.Second, 10*time.Millisecond, func() error {
		select {
		case <-exited:
			return testutil.Abort(errors.New("nri-cni exited instead of waiting"))
		default:
		}
		return testutil.Until("nri-cni to say "+strconv.Quote(want), func() bool { return strings.Contains(out.String(), want) })()
	}); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(out.String(), cfg.ConfDir) {
		t.Errorf("nri-cni does not name the directory %s:\n%s", cfg.ConfDir, out)
	}
	if joined(rt) {
		t.Fatal("nri-cni joined without a network configuration")
	}
	if ready, why := rt.NetworkReady(); ready || !strings.Contains(why, `required network plugin "cni" not connected`) {
		t.Errorf("NetworkReady = %v, %q; want not ready, the plugin not connected", ready, why)
	}
	if err := os.Mkdir(cfg.ConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
	waitJoined(t, rt, exited, out, "after the conflist was written")
	if ready, why := rt.NetworkReady(); !ready {
		t.Errorf("NetworkReady = false (%s) after nri-cni joined", why)
	}
	// SIGTERM ends it with status 0.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("nri-cni did not exit on SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0:\n%s", code, out)
	}
}

// TestNRICNI_SIGTERMWhileWaiting: nri-cni waiting for a CNI network
// configuration ends on SIGTERM with status 0, without connecting.
func TestNRICNI_SIGTERMWhileWaiting(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	cfg := loaderEnv(t)
	cfgFile := filepath.Join(t.TempDir(), "cni.json")
	writeJSON(t, cfgFile, cfg)
	out := &logBuffer{}
	// No runtime listens on the socket: nri-cni must not get that far.
	cmd := exec.Command(nriCNIBinary, "-config", cfgFile, "-socket", filepath.Join(t.TempDir(), "nri.sock"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	})
	want := "waiting for a CNI network configuration"
	testutil.WaitFor(t, "nri-cni to say "+want, 20*time.Second, func() bool { return strings.Contains(out.String(), want) })
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("nri-cni did not exit on SIGTERM:\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0:\n%s", code, out)
	}
	if s := out.String(); strings.Contains(s, "connect") || strings.Contains(s, "nri.sock") {
		t.Errorf("nri-cni tried to connect while waiting:\n%s", s)
	}
}
