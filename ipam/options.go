package ipam

import (
	"log/slog"
	"time"
)

// DefaultTimeout is how long [Open] waits for the store's file lock when
// [Options.Timeout] is zero.
const DefaultTimeout = time.Second

// Options tunes [Open]. A nil *Options, and every zero field, selects the
// documented default.
type Options struct {
	// Timeout bounds the wait for the exclusive file lock that keeps a
	// second process from opening the same store. Zero means
	// [DefaultTimeout]; there is no way to wait forever.
	Timeout time.Duration

	// Logger receives debug records for each allocation and release, and
	// a warning at Open for addresses left outside the configured subnets.
	// Nil discards them.
	Logger *slog.Logger

	// NoSync skips fsync after each transaction. A process crash still
	// loses nothing, but a power failure may lose recent allocations or
	// leave the file unusable. Meant for tests and benchmarks.
	NoSync bool
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Timeout <= 0 {
		out.Timeout = DefaultTimeout
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}
