package cni

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/containernetworking/cni/pkg/invoke"
)

// Option configures a Plugin.
type Option func(*options) error

type options struct {
	log     *slog.Logger
	cfg     *Config
	exec    invoke.Exec
	metrics *Metrics
}

// WithLogger sets the logger (default: discard). What CNI plugins write to
// their standard error is logged as a warning.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("cni: WithLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithConfig sets the plugin's own configuration (a plugin started by
// hand with a configuration file), loaded in New. It takes precedence
// over the runtime's: a configuration the runtime passes in Configure is
// then ignored (and logged). Without it the plugin uses the runtime's, or
// else DefaultConfig. Empty fields take their defaults. The rule is
// nri-podnet's too.
func WithConfig(cfg Config) Option {
	return func(o *options) error {
		if o.cfg != nil {
			return errors.New("cni: WithConfig given twice")
		}
		cfg = cfg.withDefaults()
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("cni: WithConfig: %w", err)
		}
		o.cfg = &cfg
		return nil
	}
}

// WithExec replaces the way CNI plugin executables are found and run
// (default: libcni's invoke.DefaultExec, standard error logged).
func WithExec(e invoke.Exec) Option {
	return func(o *options) error {
		if e == nil {
			return errors.New("cni: WithExec: nil Exec")
		}
		o.exec = e
		return nil
	}
}

// WithMetrics makes the plugin record its metrics in m (see [Metrics]);
// without it the plugin records none.
func WithMetrics(m *Metrics) Option {
	return func(o *options) error {
		if m == nil {
			return errors.New("cni: WithMetrics: nil Metrics")
		}
		if o.metrics != nil {
			return errors.New("cni: WithMetrics given twice")
		}
		o.metrics = m
		return nil
	}
}
