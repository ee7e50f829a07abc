package cni

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultWaitInterval is how often WaitForNetwork tries to load the
// network, unless WithWaitInterval says otherwise.
const DefaultWaitInterval = time.Second

// WaitOption configures one call of WaitForNetwork.
type WaitOption func(*waitOptions) error

type waitOptions struct {
	interval time.Duration
	log      *slog.Logger
}

// WithWaitInterval sets the time between two attempts to load the network
// (default DefaultWaitInterval). It must be positive.
func WithWaitInterval(d time.Duration) WaitOption {
	return func(o *waitOptions) error {
		if d <= 0 {
			return fmt.Errorf("cni: WithWaitInterval: interval %v is not positive", d)
		}
		o.interval = d
		return nil
	}
}

// WithWaitLogger sets the logger that WaitForNetwork says why it waits
// to, and that gets what CNI plugins asked for their version write to
// their standard error (default: discard).
func WithWaitLogger(l *slog.Logger) WaitOption {
	return func(o *waitOptions) error {
		if l == nil {
			return errors.New("cni: WithWaitLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// WaitForNetwork returns the CNI network that cfg selects (see
// LoadNetwork) once it loads. Until then it tries again every interval
// (WithWaitInterval): while cfg.ConfDir does not exist or has no
// configuration file, no file defines the network cfg.Network names, the
// chosen file does not load, or the executables of its plugins are not
// installed yet, it waits, and logs at info level "waiting for a CNI
// network configuration" with the directory, the network if cfg names
// one, and the reason, again each time the reason changes. When it found
// the network after waiting, it logs the network and its file.
//
// It returns ctx.Err() as soon as ctx is done (at once if it already is),
// and at once an error wrapping ErrInvalidConfig for an invalid cfg (empty
// fields take their defaults) or an error for an invalid option. It
// starts no goroutine.
//
// nri-cni started by hand calls it before it connects to the runtime, so
// that it registers only with a network to offer: until then a runtime
// that requires it reports the network not ready.
func WaitForNetwork(ctx context.Context, cfg Config, opts ...WaitOption) (*Network, error) {
	o := waitOptions{interval: DefaultWaitInterval, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	attrs := []any{"dir", cfg.ConfDir}
	if cfg.Network != "" {
		attrs = append(attrs, "network", cfg.Network)
	}
	exec := defaultExec(o.log)
	t := time.NewTicker(o.interval)
	defer t.Stop()
	last := "" // the reason logged last; "" before the first failed attempt
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := loadNetwork(ctx, cfg, exec)
		if err == nil {
			if last != "" {
				o.log.Info("found the CNI network configuration", "dir", cfg.ConfDir,
					"network", n.List.Name, "file", n.File)
			}
			return n, nil
		}
		if ctx.Err() != nil { // the VERSION command was cut short
			return nil, ctx.Err()
		}
		if reason := err.Error(); reason != last {
			last = reason
			o.log.Info("waiting for a CNI network configuration", append(attrs, "reason", reason)...)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
