package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/backoff"
)

// TestRetryDelay_RuntimeAway: while nothing listens on the runtime's
// socket (missing, or refusing connections: the runtime is restarting),
// the delay between attempts stays at most awayPoll, so that a plugin
// rejoins a restarted runtime within that of its listening again, however
// long it was away; with the defaults the delay otherwise reaches 5 s. The
// containerd integration tests run in network mode nri created pods about
// a second after containerd's restart, when nri-podnet, the required
// network plugin, was often still waiting to retry: those pods would fail
// ("network not ready"). Other failures back off as before, and an initial
// delay above awayPoll is kept.
func TestRetryDelay_RuntimeAway(t *testing.T) {
	away := []error{
		fmt.Errorf("plugin %q: connecting to runtime: %w", "10-x", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)}),
		fmt.Errorf("plugin %q: connecting to runtime: %w", "10-x", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}),
	}
	other := errors.New(`plugin "10-x": Configure: refused`)
	for _, tc := range []struct {
		name         string
		initial, max time.Duration
		err          error
		want         time.Duration // the longest delay after many attempts
	}{
		{"missing socket", DefaultReconnectInitial, DefaultReconnectMax, away[0], awayPoll},
		{"refused", DefaultReconnectInitial, DefaultReconnectMax, away[1], awayPoll},
		{"other failure", DefaultReconnectInitial, DefaultReconnectMax, other, DefaultReconnectMax},
		{"initial above awayPoll", time.Second, DefaultReconnectMax, away[0], time.Second},
		{"max below awayPoll", time.Millisecond, 10 * time.Millisecond, away[0], 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backoff.New(tc.initial, tc.max)
			var longest time.Duration
			for range 200 {
				longest = max(longest, retryDelay(b, tc.err))
			}
			if longest > tc.want || longest < tc.want/2 {
				t.Errorf("longest delay %v, want within [%v, %v]", longest, tc.want/2, tc.want)
			}
		})
	}
}

// TestRun_RetryDelays: Run waits between attempts to join as retryDelay
// says: after other failures the backoff's delay, doubling from the
// initial delay up to the maximum, each within half of it and itself;
// while the runtime is away, never more than awayPoll. On synctest's
// clock, with a dialer that fails at once, so that the test sees when
// each attempt was made.
func TestRun_RetryDelays(t *testing.T) {
	const initial, maxDelay = 50 * time.Millisecond, 2 * time.Second
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name  string
		err   error         // of every attempt
		limit time.Duration // no delay is longer
	}{
		{"other failure", errors.New("no"), maxDelay},
		{"runtime away", refused, awayPoll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const attempts = 12
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var at []time.Time // of each attempt
				dial := func(context.Context, string) (net.Conn, error) {
					if at = append(at, time.Now()); len(at) == attempts {
						cancel()
					}
					return nil, tc.err
				}
				s, err := New(runPodHandler{}, WithPluginName("test"), WithPluginIdx("10"), WithSocketPath("nri.sock"),
					WithEnv(func(string) string { return "" }, "test"), WithReconnect(initial, maxDelay), WithDialer(dial))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Run(ctx); err != nil {
					t.Fatalf("Run = %v once its context was cancelled, want nil", err)
				}
				nominal := initial
				for i := 1; i < len(at); i++ {
					lo, hi := min(nominal/2, tc.limit), min(nominal, tc.limit)
					if d := at[i].Sub(at[i-1]); d < lo || d > hi {
						t.Errorf("delay %d = %v, want within [%v, %v]", i, d, lo, hi)
					}
					nominal = min(2*nominal, maxDelay)
				}
			})
		})
	}
}

// runPodHandler is a plugin handling RunPodSandbox, doing nothing.
type runPodHandler struct{}

func (runPodHandler) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }
