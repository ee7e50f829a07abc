package runtime

import "time"

// WithClock sets the status cache's clock, so that tests move time on
// instead of sleeping past a TTL.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		c.now = now
		return nil
	}
}

// Joining returns how many plugins are joining r: registered as joining,
// and not yet taking part in requests.
func Joining(r *Runtime) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.joining)
}
