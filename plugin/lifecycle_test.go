package plugin_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// patience bounds every wait of these tests; none of them measures time.
const patience = 10 * time.Second

// socketPath returns a runtime socket path in a new temp dir, short
// enough for a unix socket address.
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nrinet-plugin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "nri.sock")
}

// startRuntime starts a runtime accepting plugins on sock; it is stopped
// when the test ends, or earlier by the returned function.
func startRuntime(t testing.TB, sock string, opts ...runtime.Option) (*runtime.Runtime, func()) {
	t.Helper()
	logs := &testutil.LogBuffer{}
	base := []runtime.Option{
		runtime.WithSocketPath(sock), runtime.WithPluginPath(""),
		runtime.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	rt, err := runtime.New("plugin-test-runtime", "v0", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		rt.Stop(ctx)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("runtime logs:\n%s", logs)
		}
	})
	return rt, stop
}

// newStub returns a stub for h named 10-test that dials sock.
func newStub(t testing.TB, h any, sock string, opts ...plugin.Option) *plugin.Stub {
	t.Helper()
	base := []plugin.Option{
		plugin.WithPluginName("test"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(sock), plugin.WithEnv(func(string) string { return "" }, "test"),
	}
	s, err := plugin.New(h, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// joined reports whether the runtime lists a plugin of that full name.
func joined(rt *runtime.Runtime, name string) bool {
	for _, p := range rt.Plugins() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// receive waits for a value on ch, failing the test if none comes within
// patience.
func receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestStub_StopFromOnClose: the on-close callback may call Stop, and Wait
// still waits for the callback to return.
func TestStub_StopFromOnClose(t *testing.T) {
	sock := socketPath(t)
	_, stopRuntime := startRuntime(t, sock)
	var s *plugin.Stub
	stopped := make(chan struct{})
	release := make(chan struct{})
	s = newStub(t, podOnly{}, sock, plugin.WithOnClose(func(error) {
		s.Stop()
		close(stopped)
		<-release
	}))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopRuntime() // the connection ends: the callback runs and calls Stop
	receive(t, stopped, "Stop called from the on-close callback to return")

	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v while the on-close callback was still running", err)
	default:
	}
	close(release)
	if err := receive(t, waited, "Wait"); err == nil {
		t.Fatal("Wait = nil, want why the connection ended")
	}
}
