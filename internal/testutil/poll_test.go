package testutil_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestPoll: Poll calls cond every interval until it holds or aborts, or
// patience has passed. On synctest's clock, so that the test can say how
// often and for how long.
func TestPoll(t *testing.T) {
	const patience, interval = 30 * time.Millisecond, time.Millisecond
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		results []error // cond's answers in turn; the last repeats
		want    string  // "" for nil
		calls   int
		took    time.Duration
	}{
		{name: "at once", results: []error{nil}, calls: 1},
		{name: "on the third call", results: []error{errors.New("a"), errors.New("b"), nil}, calls: 3, took: 2 * interval},
		{name: "aborted", results: []error{errors.New("a"), testutil.Abort(boom)}, want: "boom", calls: 2, took: interval},
		// The first call past patience is the last.
		{name: "never", results: []error{errors.New("not yet")}, want: "still after 30ms: not yet", calls: 32, took: patience + interval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				start := time.Now()
				err := testutil.Poll(patience, interval, func() error {
					calls++
					return tc.results[min(calls, len(tc.results))-1]
				})
				took := time.Since(start)
				switch {
				case tc.want == "" && err != nil, tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("Poll = %v, want %q", err, tc.want)
				case calls != tc.calls || took != tc.took:
					t.Errorf("cond called %d times in %v, want %d in %v", calls, took, tc.calls, tc.took)
				}
				if tc.name == "aborted" && !errors.Is(err, boom) {
					t.Errorf("Poll = %v, want the aborting error itself", err)
				}
			})
		})
	}
}

func TestUntil(t *testing.T) {
	n := 0
	cond := testutil.Until("three", func() bool { n++; return n >= 3 })
	if err := testutil.Poll(time.Second, time.Millisecond, cond); err != nil || n != 3 {
		t.Errorf("Poll(Until) = %v after %d calls", err, n)
	}
	if err := testutil.Until("never", func() bool { return false })(); err == nil || !strings.Contains(err.Error(), "never") {
		t.Errorf("Until(never)() = %v", err)
	}
}
