package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/backoff"
)

// Defaults of WithReconnect.
const (
	// DefaultReconnectInitial is the delay before the first new attempt
	// after the connection to the runtime ended or could not be made.
	DefaultReconnectInitial = 100 * time.Millisecond
	// DefaultReconnectMax caps the delay between attempts.
	DefaultReconnectMax = 5 * time.Second
)

// WithReconnect makes Run reconnect. When the connection to the runtime
// ends (the runtime stopped or restarted, even after sending Shutdown),
// or cannot be made (no socket yet, registration refused, Configure
// failed), Run logs why and tries again until ctx ends or Stop is called.
// Every new connection goes through the whole handshake: the plugin
// registers, is configured and is synchronized again, so its
// ConfigureHandler and SynchronizeHandler must be ready to be called more
// than once.
//
// Run's first attempt is immediate. The delay before each further one
// starts at initial and doubles after each attempt that did not get the
// plugin synchronized, up to maxDelay; each delay is drawn at random
// between half of it and all of it, so that plugins that lost the same
// runtime do not come back in step. Once a connection has been
// synchronized, the next delay starts at initial again. While nothing
// listens on the runtime's socket (it is missing, or refuses connections:
// the runtime is away or restarting) the delay is at most 250 ms, or
// initial if that is longer: a failed dial costs next to nothing, and a
// restarted runtime gets the plugin back within that of listening again,
// before the pods that follow its restart need it. Zero selects
// DefaultReconnectInitial and DefaultReconnectMax; maxDelay must not be
// below initial. A failure that repeats the previous one is logged at
// debug level, so that a runtime that stays away costs one warning.
//
// One failure ends Run instead: a Configure the plugin refused because
// the runtime lacks the pod network extension (an error matching
// ErrNoNetworkExtension, as WithRequiredNetworkExtension's refusal or a
// ConfigureHandler's own does). Run returns that error: the runtime that
// answers the socket is the one that was refused.
//
// Only a stub that dials the runtime's socket reconnects. A plugin the
// runtime launched, on the socket it inherited (NRI_PLUGIN_SOCKET), and a
// stub given WithConnection cannot: for them Run returns when the
// connection ends, as without this option (restarting a launched plugin is
// the runtime's job).
func WithReconnect(initial, maxDelay time.Duration) Option {
	return func(c *config) error {
		if c.reconnect != nil {
			return errors.New("plugin: WithReconnect given twice")
		}
		if initial < 0 || maxDelay < 0 {
			return fmt.Errorf("plugin: WithReconnect(%v, %v): negative delay", initial, maxDelay)
		}
		b := backoff.New(cmp.Or(initial, DefaultReconnectInitial), cmp.Or(maxDelay, DefaultReconnectMax))
		if b.Max < b.Initial {
			return fmt.Errorf("plugin: WithReconnect(%v, %v): max delay %v is below the initial delay %v", initial, maxDelay, b.Max, b.Initial)
		}
		c.reconnect = b
		return nil
	}
}

// awayPoll caps the delay between attempts while nothing listens on the
// runtime's socket (retryDelay).
const awayPoll = 250 * time.Millisecond

// retryDelay is the delay after a failed attempt to join, which failed
// with err: the backoff's, but at most awayPoll (or the initial delay, if
// longer) when nothing listens on the socket, the runtime being away: a
// failed dial costs next to nothing, and a restarted runtime gets its
// plugins back at once (pods that come right after a restart need the
// network plugins the runtime requires).
func retryDelay(b *backoff.Backoff, err error) time.Duration {
	d := b.Next()
	if runtimeAway(err) {
		d = min(d, max(awayPoll, b.Initial))
	}
	return d
}

// runtimeAway reports whether err is a dial to a socket nobody listens on:
// it does not exist, or refuses connections.
func runtimeAway(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED))
}

// reconnects reports whether Run reconnects: WithReconnect was given and
// the stub dials the runtime.
func (s *Stub) reconnects() bool {
	if s.cfg.reconnect == nil {
		return false
	}
	if s.cfg.conn != nil {
		s.log.Debug("given a connection (WithConnection): not reconnecting")
		return false
	}
	if v := s.cfg.env(api.PluginSocketEnv); v != "" {
		s.log.Debug("launched by the runtime on an inherited socket: not reconnecting", api.PluginSocketEnv, v)
		return false
	}
	return true
}

// runLoop connects, serves, and reconnects after a backoff until ctx ends.
// It returns ErrStopped if Stop ended it, a Configure refused for want of
// the pod network extension, else nil.
func (s *Stub) runLoop(ctx context.Context) error {
	b := *s.cfg.reconnect
	b.Reset()
	var lastFailure string // of the previous failed attempt, to log a repeated one quietly
	for {
		if err := s.Start(ctx); err != nil {
			if ctx.Err() != nil {
				return runEnd(ctx)
			}
			if errors.Is(err, ErrNoNetworkExtension) {
				// The plugin refused the runtime: trying again would
				// meet the same runtime and the same refusal.
				return err
			}
			delay := retryDelay(&b, err)
			level := s.log.Warn
			if err.Error() == lastFailure {
				level = s.log.Debug
			}
			lastFailure = err.Error()
			level("could not join the runtime; trying again", "error", err, "retryIn", delay.Round(time.Millisecond))
			if !sleep(ctx, delay) {
				return runEnd(ctx)
			}
			continue
		}
		if lastFailure != "" {
			s.log.Info("joined the runtime after failed attempts", "lastError", lastFailure)
			lastFailure = ""
		}
		sess := s.session()
		err := s.serve(ctx, sess)
		if ctx.Err() != nil {
			return runEnd(ctx)
		}
		if sess.wasSynchronized() {
			b.Reset()
		}
		delay := b.Next()
		if errors.Is(err, ErrShutdown) {
			s.log.Info("the runtime shut the plugin down; reconnecting until it is back", "retryIn", delay.Round(time.Millisecond))
		} else {
			s.log.Info("reconnecting to the runtime", "reason", err, "retryIn", delay.Round(time.Millisecond))
		}
		if !sleep(ctx, delay) {
			return runEnd(ctx)
		}
	}
}

// serve waits until sess ends, or ends it when ctx does, and returns why
// it ended once its goroutines and the on-close callback are done.
func (s *Stub) serve(ctx context.Context, sess *session) error {
	select {
	case <-ctx.Done():
		sess.close(ErrStopped)
	case <-sess.done:
	}
	return sess.wait()
}

// sleep waits for d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runEnd is what Run returns once its context ended: ErrStopped if Stop
// ended it, nil if the caller's context did.
func runEnd(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrStopped) {
		return ErrStopped
	}
	return nil
}
