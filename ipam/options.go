package ipam

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultTimeout is how long [Open] waits for the store's file lock
// without [WithTimeout].
const DefaultTimeout = time.Second

// Option tunes [Open].
type Option func(*options) error

// options is what Open runs with, set by its options.
type options struct {
	timeout time.Duration
	logger  *slog.Logger
	noSync  bool
}

// WithTimeout bounds the wait for the exclusive file lock that keeps a
// second process from opening the same store (default [DefaultTimeout];
// there is no way to wait forever).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("ipam: lock timeout %v: want > 0", d)
		}
		o.timeout = d
		return nil
	}
}

// WithLogger gives the allocator a logger for debug records of each
// allocation and release, and a warning at Open for addresses left
// outside the configured subnets (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("ipam: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithNoSync skips fsync after each transaction. A process crash still
// loses nothing, but a power failure may lose recent allocations or leave
// the file unusable. Meant for tests and benchmarks.
func WithNoSync() Option {
	return func(o *options) error {
		o.noSync = true
		return nil
	}
}

func newOptions(opts []Option) (options, error) {
	o := options{timeout: DefaultTimeout, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}
