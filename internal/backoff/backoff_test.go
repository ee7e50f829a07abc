package backoff_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/backoff"
)

// TestBackoff: each delay lies between half and all of a nominal
// delay that starts at initial, doubles up to max, and starts over after
// reset.
func TestBackoff(t *testing.T) {
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
			b := backoff.New(tc.initial, tc.max)
			for round := range 2 {
				for i, n := range tc.nominal {
					for range 50 { // the draw is random: try it several times at each step
						c := *b
						if d := c.Next(); d < n/2 || d > n {
							t.Fatalf("round %d, delay %d = %v, want within [%v, %v]", round, i, d, n/2, n)
						}
					}
					b.Next()
				}
				b.Reset()
			}
		})
	}
}

func ExampleBackoff() {
	b := backoff.New(time.Second, 30*time.Second)
	for range 6 {
		fmt.Print(b.Current(), " ")
		b.Next() // sleep this long (a jittered Current) before the next try
	}
	b.Reset() // it worked
	fmt.Println(b.Current())
	// Output: 1s 2s 4s 8s 16s 30s 1s
}
