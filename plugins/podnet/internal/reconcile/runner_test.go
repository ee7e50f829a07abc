package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nrinet/nrinet/plugins/podnet/internal/reconcile"
)

// recorder is a sync function that records when it ran (in the bubble's
// fake time, from start) and fails while failures are left.
type recorder struct {
	start time.Time

	mu       sync.Mutex
	at       []time.Duration
	failures int
	block    chan struct{} // if set, each sync waits for a receive
}

func (r *recorder) sync(ctx context.Context) error {
	r.mu.Lock()
	r.at = append(r.at, time.Since(r.start))
	fail := r.failures > 0
	if fail {
		r.failures--
	}
	block := r.block
	r.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
		}
	}
	if fail {
		return errors.New("failed")
	}
	return nil
}

func (r *recorder) runs() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.at...)
}

// run starts r's Runner with opts in the bubble, poked pokes times before
// Run, and returns it and a stop function that cancels it and checks
// Run's nil.
func run(t *testing.T, rec *recorder, pokes int, opts ...reconcile.Option) (*reconcile.Runner, func()) {
	t.Helper()
	rec.start = time.Now()
	r, err := reconcile.New("test runner", rec.sync, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for range pokes {
		r.Poke()
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return r, func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunner(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []reconcile.Option
		failures int
		// act runs in the bubble after Run has started and gone idle.
		act  func(r *reconcile.Runner)
		want []time.Duration
	}{
		{
			name: "syncs once at start, pokes before it are one",
			act:  func(*reconcile.Runner) { time.Sleep(time.Hour) },
			want: []time.Duration{0},
		},
		{
			name: "a poke syncs at once",
			act: func(r *reconcile.Runner) {
				time.Sleep(time.Second)
				r.Poke()
				time.Sleep(time.Hour)
			},
			want: []time.Duration{0, time.Second},
		},
		{
			name:     "a failure is retried with doubling delays up to the maximum",
			opts:     []reconcile.Option{reconcile.WithRetry(time.Second, 3*time.Second)},
			failures: 4,
			act:      func(*reconcile.Runner) { time.Sleep(time.Hour) },
			// fails at 0, 1, 3, 6; succeeds at 9
			want: []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second, 9 * time.Second},
		},
		{
			name:     "a poke does not wait for the retry",
			opts:     []reconcile.Option{reconcile.WithRetry(time.Minute, time.Minute)},
			failures: 1,
			act: func(r *reconcile.Runner) {
				time.Sleep(time.Second)
				r.Poke()
				time.Sleep(time.Hour)
			},
			// fails at 0; the poke's sync at 1 s succeeds, and the retry
			// due at 1 min is one more sync
			want: []time.Duration{0, time.Second, time.Minute},
		},
		{
			name: "resyncs each period after the last sync",
			opts: []reconcile.Option{reconcile.WithResync(time.Minute)},
			act: func(r *reconcile.Runner) {
				time.Sleep(150 * time.Second)
			},
			want: []time.Duration{0, time.Minute, 2 * time.Minute},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{failures: tc.failures}
				// Pokes before Run are one with its first sync.
				r, stop := run(t, rec, 2, tc.opts...)
				synctest.Wait()
				tc.act(r)
				stop()
				if got := rec.runs(); !equal(got, tc.want) {
					t.Errorf("syncs at %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestRunner_Coalesces checks that pokes during a sync make one more
// sync, not one each.
func TestRunner_Coalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{block: make(chan struct{})}
		r, stop := run(t, rec, 0)
		synctest.Wait() // the first sync is waiting on block
		for range 5 {
			r.Poke()
		}
		rec.block <- struct{}{} // first sync ends
		synctest.Wait()
		rec.block <- struct{}{} // the one more
		synctest.Wait()
		stop()
		if got := len(rec.runs()); got != 2 {
			t.Errorf("%d syncs, want 2", got)
		}
	})
}

// TestRunner_StopsInSync checks that Run returns when ctx ends during a
// sync, after that sync, without another.
func TestRunner_StopsInSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{block: make(chan struct{}), failures: 1}
		r, stop := run(t, rec, 0, reconcile.WithResync(time.Second))
		synctest.Wait()
		r.Poke()
		stop() // the sync sees ctx done, fails; nothing is retried
		if got := len(rec.runs()); got != 1 {
			t.Errorf("%d syncs, want 1", got)
		}
	})
}

func TestRunner_RunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		r, stop := run(t, rec, 0)
		synctest.Wait()
		err := r.Run(t.Context())
		stop()
		if err == nil || err.Error() != "test runner: Run called twice" {
			t.Errorf("second Run: %v, want test runner: Run called twice", err)
		}
	})
}

func TestNew_BadOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  reconcile.Option
		want string
	}{
		{reconcile.WithRetry(0, time.Second), "r: reconcile: retry delays 0s to 1s: want 0 < min <= max"},
		{reconcile.WithRetry(2*time.Second, time.Second), "r: reconcile: retry delays 2s to 1s: want 0 < min <= max"},
		{reconcile.WithResync(0), "r: reconcile: resync period 0s: want > 0"},
	} {
		_, err := reconcile.New("r", func(context.Context) error { return nil }, tc.opt)
		if err == nil || err.Error() != tc.want {
			t.Errorf("New: %v, want %s", err, tc.want)
		}
	}
}
