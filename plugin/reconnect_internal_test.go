package plugin

import (
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
