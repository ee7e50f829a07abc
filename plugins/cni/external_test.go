package cniplugin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/runtime"
)

// startSocketRuntime starts a runtime that accepts plugins on sock and
// launches none. The returned function stops it (also done when the test
// ends).
func startSocketRuntime(t *testing.T, sock string) (*runtime.Runtime, func()) {
	t.Helper()
	logger, _ := newLogger(t)
	rt, err := runtime.New("nrcni-test-runtime", "v0.0.1",
		runtime.WithSocketPath(sock), runtime.WithPluginPath(""), runtime.WithLogger(logger))
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
	deadline := time.Now().Add(20 * time.Second)
	for !joined(rt) {
		select {
		case <-exited:
			t.Fatalf("%s: nri-cni exited instead of joining:\n%s", what, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: nri-cni did not join in time:\n%s", what, out)
		}
		time.Sleep(10 * time.Millisecond)
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
