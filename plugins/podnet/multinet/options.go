package multinet

import (
	"errors"
	"log/slog"
)

// Option configures a [Manager].
type Option func(*options) error

type options struct {
	log      *slog.Logger
	hostPath string
	noSync   bool
}

// WithLogger sets the logger (default: discard). Nil or a second one is
// refused.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil || o.log != nil {
			return errors.New("multinet: WithLogger: nil or given twice")
		}
		o.log = l
		return nil
	}
}

// WithHostNetNS sets the network namespace that holds the bridges, the
// host ends of the veths, the macvlans' masters and the host interfaces
// (default: the calling process's, /proc/self/ns/net at [New]). Tests
// give a namespace of their own.
func WithHostNetNS(path string) Option {
	return func(o *options) error {
		if path == "" || o.hostPath != "" {
			return errors.New("multinet: WithHostNetNS: empty or given twice")
		}
		o.hostPath = path
		return nil
	}
}

// WithNoSync skips fsync in the allocators (tests and benchmarks only:
// see ipam.WithNoSync).
func WithNoSync() Option {
	return func(o *options) error {
		o.noSync = true
		return nil
	}
}
