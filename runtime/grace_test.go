package runtime

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestStuckGrace: a tenth of the timeout, never under 250 ms (a goroutine
// waiting for a CPU on a loaded node is not a plugin that stopped
// reading), never over 1 s.
func TestStuckGrace(t *testing.T) {
	for _, tc := range []struct{ timeout, want time.Duration }{
		{10 * time.Millisecond, 250 * time.Millisecond},
		{250 * time.Millisecond, 250 * time.Millisecond}, // the status deadline
		{2 * time.Second, 250 * time.Millisecond},        // the request timeout
		{5 * time.Second, 500 * time.Millisecond},
		{time.Minute, time.Second},
	} {
		if got := stuckGrace(tc.timeout); got != tc.want {
			t.Errorf("stuckGrace(%v) = %v, want %v", tc.timeout, got, tc.want)
		}
	}
}

// TestDeadlined: deadlined reports a call that returned after its
// deadline, or after its caller gave up, as late; and one still running
// stuckGrace after that is reported stuck, once, at that moment, while
// one back within the grace is not. On synctest's clock, so that the test
// says when; fn stands for a call that does not watch its context, as a
// blocked send does not.
func TestDeadlined(t *testing.T) {
	const timeout = 2 * time.Second
	grace := stuckGrace(timeout) // 250 ms
	for _, tc := range []struct {
		name        string
		cancelAfter time.Duration // when the caller gives up; 0: never
		returnAfter time.Duration // when fn returns
		wantLate    bool
		wantStuckAt time.Duration // 0: not stuck
	}{
		{name: "in time", returnAfter: timeout / 2},
		{name: "late, back within the grace", returnAfter: timeout + grace - time.Millisecond, wantLate: true},
		{name: "stuck", returnAfter: timeout + 3*grace, wantLate: true, wantStuckAt: timeout + grace},
		{name: "abandoned, back within the grace", cancelAfter: time.Second, returnAfter: time.Second + grace/2, wantLate: true},
		{name: "abandoned and stuck", cancelAfter: time.Second, returnAfter: timeout, wantLate: true, wantStuckAt: time.Second + grace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &Runtime{}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAfter > 0 {
					time.AfterFunc(tc.cancelAfter, cancel)
				}
				start := time.Now()
				var stuckAt []time.Duration
				res := r.deadlined(ctx, timeout, func(context.Context) error {
					time.Sleep(tc.returnAfter)
					return nil
				}, func(g time.Duration) {
					if g != grace {
						t.Errorf("stuck called with a grace of %v, want %v", g, grace)
					}
					stuckAt = append(stuckAt, time.Since(start))
				})
				// Wait for the watch of the grace, if it began, as Stop
				// does: none begins once stopped is set.
				r.mu.Lock()
				r.stopped = true
				r.mu.Unlock()
				r.wg.Wait()
				if res.late != tc.wantLate || res.err != nil {
					t.Errorf("deadlined = %+v, want late %v and no error", res, tc.wantLate)
				}
				var want []time.Duration
				if tc.wantStuckAt > 0 {
					want = []time.Duration{tc.wantStuckAt}
				}
				if !slices.Equal(stuckAt, want) {
					t.Errorf("stuck called at %v, want %v", stuckAt, want)
				}
			})
		})
	}
}
