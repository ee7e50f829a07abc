package runtime

import (
	"testing"
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
