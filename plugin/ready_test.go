package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// gatedConfigure holds each Configure until the test releases it.
type gatedConfigure struct {
	podOnly
	configuring chan struct{} // a value when Configure starts
	release     chan struct{} // a value lets one Configure return
}

func (g *gatedConfigure) Configure(context.Context, string, string, string) (api.EventMask, error) {
	g.configuring <- struct{}{}
	<-g.release
	return 0, nil
}

// TestStub_Ready follows Ready through a plugin's life: not connected,
// connected but not configured, configured, the runtime gone, back with a
// restarted runtime, stopped.
func TestStub_Ready(t *testing.T) {
	sock := socketPath(t)
	g := &gatedConfigure{configuring: make(chan struct{}, 1), release: make(chan struct{}, 1)}
	closed := make(chan error, 4)
	s := newStub(t, g, sock, plugin.WithReconnect(time.Millisecond, 20*time.Millisecond),
		plugin.WithOnClose(func(err error) { closed <- err }))
	wantNotReady := func(step, reason string) {
		t.Helper()
		ok, why := s.Ready()
		if ok || !strings.Contains(why, reason) || !strings.Contains(why, `"10-test"`) {
			t.Errorf("%s: Ready() = %v, %q; want false, a reason naming the plugin and saying %q", step, ok, why, reason)
		}
	}
	configured := func(step string) {
		t.Helper()
		receive(t, g.configuring, step+": Configure")
		wantNotReady(step+", in Configure", "connected, waiting for the runtime's Configure")
		g.release <- struct{}{}
		testutil.WaitFor(t, step+": Ready", patience, func() bool { ok, _ := s.Ready(); return ok })
		if ok, why := s.Ready(); !ok || why != "" {
			t.Errorf("%s: Ready() = %v, %q; want true, \"\"", step, ok, why)
		}
	}

	wantNotReady("before Run", "not connected to the runtime yet")
	_, stopRuntime := startRuntime(t, sock)
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, s, ctx)
	configured("first runtime")

	stopRuntime()
	receive(t, closed, "the connection to the first runtime to end")
	wantNotReady("runtime stopped", "not connected to the runtime: ")

	startRuntime(t, sock)
	configured("restarted runtime")

	cancel()
	if err := receive(t, done, "Run to return"); err != nil {
		t.Fatalf("Run = %v", err)
	}
	wantNotReady("after Run", "not connected to the runtime: ")
}
