package runtime

import (
	"context"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/backoff"
)

// Defaults of WithRestartBackoff.
const (
	DefaultRestartBackoff    = 100 * time.Millisecond
	DefaultMaxRestartBackoff = 30 * time.Second
)

// launchPlugins starts a supervisor for every pre-installed plugin and
// waits until each plugin has joined or failed to, or ctx ends.
func (r *Runtime) launchPlugins(ctx context.Context) error {
	found, err := r.discover()
	if err != nil {
		return err
	}
	var firsts []chan struct{}
	for _, pi := range found {
		if !r.track() {
			break
		}
		first := make(chan struct{})
		firsts = append(firsts, first)
		go func() {
			defer r.wg.Done()
			r.supervise(pi, first)
		}()
	}
	for _, first := range firsts {
		select {
		case <-first:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// supervise runs a pre-installed plugin for as long as the Runtime runs:
// it launches the plugin, and whenever the plugin's process exits, or
// cannot be started, launches it again after a backoff that doubles from
// the minimum of WithRestartBackoff up to its maximum, with jitter, and
// starts over from the minimum once an incarnation has run for longer
// than the maximum. first is closed once the first incarnation has joined
// or failed to.
func (r *Runtime) supervise(pi preinstalled, first chan struct{}) {
	full := api.FullPluginName(pi.idx, pi.name)
	log := r.log.With("plugin", full)
	signal := func() {
		if first != nil {
			close(first)
			first = nil
		}
	}
	defer signal()
	b := backoff.New(r.cfg.restartBackoff, r.cfg.maxRestartBackoff)
	for restarts := 0; ; restarts++ {
		started := time.Now()
		p, err := r.launch(pi, restarts)
		if err != nil {
			if r.isStopped() {
				return
			}
			log.Warn("launching plugin failed", "error", err, "restarts", restarts)
		} else {
			r.run(p)
			signal()
			select {
			case <-p.exited:
			case <-r.ctx.Done():
				return // Stop shuts the plugin down
			}
			if r.isStopped() {
				return
			}
			if time.Since(started) > r.cfg.maxRestartBackoff {
				b.Reset()
			}
			log.Warn("plugin exited; restarting it", "reason", p.reason(), "restarts", restarts+1, "in", b.Current())
		}
		signal()
		r.cfg.observer.PluginRestarted(full)
		t := time.NewTimer(b.Next())
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return
		}
	}
}
