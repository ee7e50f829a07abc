package plugin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

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
