package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
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

// joiner counts the handshakes it goes through.
type joiner struct {
	podOnly
	configured atomic.Int32
	synced     chan struct{} // one value per Synchronize
}

func newJoiner() *joiner { return &joiner{synced: make(chan struct{}, 16)} }

func (j *joiner) Configure(context.Context, string, string, string) (api.EventMask, error) {
	j.configured.Add(1)
	return 0, nil
}

func (j *joiner) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	j.synced <- struct{}{}
	return nil, nil
}

// run runs s in the background and returns the channel Run's result
// arrives on; the test's end cancels ctx and waits for it.
func run(t testing.TB, s *plugin.Stub, ctx context.Context) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		done <- s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(patience):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return done
}

// dialCounter is a dialer that reports each attempt.
type dialCounter struct{ attempts chan error }

func newDialCounter() *dialCounter { return &dialCounter{attempts: make(chan error, 1024)} }

func (d *dialCounter) dial(ctx context.Context, path string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "unix", path)
	d.attempts <- err
	return c, err
}

// TestRun_ReconnectsToRestartedRuntime: with WithReconnect, a runtime that
// stops (sending Shutdown) does not end Run; the plugin joins the runtime
// started next on the same socket and is configured and synchronized
// again. Cancelling ctx then ends Run with nil.
func TestRun_ReconnectsToRestartedRuntime(t *testing.T) {
	sock := socketPath(t)
	rt, stopRuntime := startRuntime(t, sock)
	j := newJoiner()
	closed := make(chan error, 4)
	s := newStub(t, j, sock, plugin.WithReconnect(time.Millisecond, 20*time.Millisecond),
		plugin.WithOnClose(func(err error) { closed <- err }))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, s, ctx)
	receive(t, j.synced, "the first Synchronize")
	testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })

	stopRuntime()
	if err := receive(t, closed, "the first connection to end"); !errors.Is(err, plugin.ErrShutdown) {
		t.Fatalf("first connection ended with %v, want ErrShutdown", err)
	}
	rt, _ = startRuntime(t, sock)
	receive(t, j.synced, "Synchronize by the restarted runtime")
	testutil.WaitFor(t, "the plugin to join the restarted runtime", patience, func() bool { return joined(rt, s.Name()) })
	if n := j.configured.Load(); n != 2 {
		t.Errorf("Configure called %d times, want 2", n)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while reconnecting", err)
	default:
	}

	cancel()
	if err := receive(t, done, "Run to return after cancel"); err != nil {
		t.Fatalf("Run = %v after cancel, want nil", err)
	}
	if err := receive(t, closed, "the second connection to end"); !errors.Is(err, plugin.ErrStopped) {
		t.Fatalf("second connection ended with %v, want ErrStopped", err)
	}
	testutil.WaitFor(t, "the runtime to drop the plugin", patience, func() bool { return !joined(rt, s.Name()) })
}

// TestRun_ReconnectWaitsForRuntime: a plugin started before any runtime
// listens keeps trying and joins once one does.
func TestRun_ReconnectWaitsForRuntime(t *testing.T) {
	sock := socketPath(t)
	d := newDialCounter()
	j := newJoiner()
	s := newStub(t, j, sock, plugin.WithReconnect(time.Millisecond, 10*time.Millisecond), plugin.WithDialer(d.dial))
	run(t, s, context.Background())
	for i := range 3 {
		if err := receive(t, d.attempts, fmt.Sprintf("connection attempt %d", i+1)); err == nil {
			t.Fatalf("attempt %d connected with no runtime listening", i+1)
		}
	}
	rt, _ := startRuntime(t, sock)
	receive(t, j.synced, "Synchronize")
	testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })
}

// TestRun_ReconnectEnds: cancelling ctx or calling Stop ends Run at once,
// while it waits to retry or while it is connected.
func TestRun_ReconnectEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		connected bool // a runtime is listening
		stop      bool // Stop instead of cancel
		want      error
	}{
		{name: "cancel while waiting to retry", want: nil},
		{name: "Stop while waiting to retry", stop: true, want: plugin.ErrStopped},
		{name: "cancel while connected", connected: true, want: nil},
		{name: "Stop while connected", connected: true, stop: true, want: plugin.ErrStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := socketPath(t)
			if tc.connected {
				startRuntime(t, sock)
			}
			d := newDialCounter()
			j := newJoiner()
			// A delay far beyond the test's patience: only ending Run
			// can interrupt it.
			s := newStub(t, j, sock, plugin.WithReconnect(time.Hour, time.Hour), plugin.WithDialer(d.dial))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := run(t, s, ctx)
			if tc.connected {
				receive(t, j.synced, "Synchronize")
			} else if err := receive(t, d.attempts, "the first attempt"); err == nil {
				t.Fatal("connected with no runtime listening")
			}
			if tc.stop {
				s.Stop()
			} else {
				cancel()
			}
			if err := receive(t, done, "Run to return"); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestRun_WithoutReconnect: without WithReconnect, Run returns when the
// runtime goes away or is not there.
func TestRun_WithoutReconnect(t *testing.T) {
	t.Run("runtime stops", func(t *testing.T) {
		sock := socketPath(t)
		rt, stopRuntime := startRuntime(t, sock)
		j := newJoiner()
		s := newStub(t, j, sock)
		done := run(t, s, context.Background())
		testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })
		stopRuntime()
		if err := receive(t, done, "Run to return"); err != nil {
			t.Fatalf("Run = %v after the runtime shut the plugin down, want nil", err)
		}
	})
	t.Run("no runtime", func(t *testing.T) {
		done := run(t, newStub(t, newJoiner(), socketPath(t)), context.Background())
		if err := receive(t, done, "Run to return"); err == nil || !strings.Contains(err.Error(), "connecting to runtime") {
			t.Fatalf("Run = %v, want a connection error", err)
		}
	})
}

// TestRun_ReconnectInheritedSocket: a plugin launched on an inherited
// socket cannot reconnect: with WithReconnect, Run still returns when that
// connection ends, and never dials.
func TestRun_ReconnectInheritedSocket(t *testing.T) {
	sock := socketPath(t)
	rt, stopRuntime := startRuntime(t, sock)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "runtime-end")
	rtConn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{api.PluginSocketEnv: strconv.Itoa(fds[0])} // the stub takes this fd over
	d := newDialCounter()
	j := newJoiner()
	s := newStub(t, j, sock, plugin.WithReconnect(time.Millisecond, time.Millisecond), plugin.WithDialer(d.dial),
		plugin.WithEnv(func(k string) string { return env[k] }, "test"))
	done := run(t, s, context.Background())
	connected := make(chan error, 1)
	go func() { connected <- rt.Connect(context.Background(), rtConn) }()
	if err := receive(t, connected, "the runtime to connect the plugin"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })
	stopRuntime()
	if err := receive(t, done, "Run to return"); err != nil {
		t.Fatalf("Run = %v, want nil after the runtime shut the plugin down", err)
	}
	if n := len(d.attempts); n != 0 {
		t.Errorf("the stub dialed %d times; a launched plugin must not", n)
	}
}

func TestWithReconnect_Validation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []plugin.Option
		want string
	}{
		{"defaults", []plugin.Option{plugin.WithReconnect(0, 0)}, ""},
		{"initial only", []plugin.Option{plugin.WithReconnect(time.Second, 0)}, ""},
		{"negative initial", []plugin.Option{plugin.WithReconnect(-time.Second, 0)}, "negative delay"},
		{"negative max", []plugin.Option{plugin.WithReconnect(0, -1)}, "negative delay"},
		{"max below initial", []plugin.Option{plugin.WithReconnect(time.Second, time.Millisecond)}, "max delay 1ms is below the initial delay 1s"},
		{"initial above default max", []plugin.Option{plugin.WithReconnect(time.Minute, 0)}, "max delay 5s is below the initial delay 1m0s"},
		{"twice", []plugin.Option{plugin.WithReconnect(0, 0), plugin.WithReconnect(0, 0)}, "WithReconnect given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plugin.New(podOnly{}, append([]plugin.Option{plugin.WithPluginName("x"), plugin.WithPluginIdx("10")}, tc.opts...)...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestStub_Done: Done is closed without a connection, open while
// connected, and closed once the connection ended, already when the
// on-close callback runs (which could not call Wait).
func TestStub_Done(t *testing.T) {
	sock := socketPath(t)
	_, stopRuntime := startRuntime(t, sock)
	var s *plugin.Stub
	doneInCallback := make(chan bool, 1)
	s = newStub(t, podOnly{}, sock, plugin.WithOnClose(func(error) {
		select {
		case <-s.Done():
			doneInCallback <- true
		default:
			doneInCallback <- false
		}
	}))
	select {
	case <-s.Done():
	default:
		t.Fatal("Done is open before Start")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatal("Done is closed while connected")
	default:
	}
	stopRuntime()
	receive(t, s.Done(), "Done after the runtime stopped")
	if !receive(t, doneInCallback, "the on-close callback") {
		t.Error("Done was open in the on-close callback")
	}
	if err := s.Wait(); err == nil {
		t.Error("Wait = nil, want why the connection ended")
	}
}
