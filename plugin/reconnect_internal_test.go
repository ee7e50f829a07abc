package plugin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestBackoff_Delay: each delay lies between half and all of a nominal
// delay that starts at initial, doubles up to max, and starts over after
// reset.
func TestBackoff_Delay(t *testing.T) {
	for _, tc := range []struct {
		name         string
		initial, max time.Duration
		nominal      []time.Duration // of successive delays
	}{
		{"doubles to the cap", 100 * time.Millisecond, time.Second,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}},
		{"initial equals max", time.Second, time.Second, []time.Duration{time.Second, time.Second}},
		{"one nanosecond", 1, 4, []time.Duration{1, 2, 4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &backoff{initial: tc.initial, max: tc.max}
			for round := range 2 {
				for i, n := range tc.nominal {
					for range 50 { // the draw is random: try it several times at each step
						c := *b
						if d := c.delay(); d < n/2 || d > n {
							t.Fatalf("round %d, delay %d = %v, want within [%v, %v]", round, i, d, n/2, n)
						}
					}
					b.delay()
				}
				b.reset()
			}
		})
	}
}

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
			b := &backoff{initial: tc.initial, max: tc.max}
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
