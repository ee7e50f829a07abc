package backoff

import (
	"cmp"
	"math/rand/v2"
	"time"
)

// Backoff hands out the delays between retries: Initial, doubling up to
// Max, each jittered into its upper half. The zero value of its state is
// ready once Initial and Max are set; it is used by one goroutine at a
// time.
type Backoff struct {
	Initial, Max time.Duration
	next         time.Duration // 0: Initial
}

// New returns a Backoff from initial up to max.
func New(initial, max time.Duration) *Backoff {
	return &Backoff{Initial: initial, Max: max}
}

// Current returns the delay the next call of Next is jittered from.
func (b *Backoff) Current() time.Duration { return cmp.Or(b.next, b.Initial) }

// Next returns the delay before the next retry, between half of Current
// and Current, and doubles Current up to Max.
func (b *Backoff) Next() time.Duration {
	d := b.Current()
	b.next = min(2*d, b.Max)
	return d/2 + rand.N(d/2+1)
}

// Reset makes Current the initial delay again, after a success.
func (b *Backoff) Reset() { b.next = 0 }
