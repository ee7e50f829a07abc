package runtime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file is the one path every request to a plugin takes: a deadline
// that holds whatever the plugin does, one classification of what went
// wrong, and one application of the failure policy.

// outcome classifies how one call to a plugin ended.
type outcome int

const (
	// answered: the plugin answered, with a result or its own error.
	answered outcome = iota
	// late: no answer by the deadline.
	late
	// lost: the connection broke during the call.
	lost
	// abandoned: the caller's context ended first.
	abandoned
	// gone: the plugin's connection was closed before its turn, so it was
	// never asked: it takes no part in the request, as if it had left
	// before the request began, whatever its failure policy.
	gone
)

// unsettled reports whether a call that ended this way may have been acted
// on by the plugin, or still be: it had the request but no answer came
// back in time, or the caller stopped waiting for it.
func (o outcome) unsettled() bool { return o == late || o == abandoned }

// invoke makes one call to p under timeout, on the caller's goroutine,
// and returns by the deadline whatever the plugin does. ttrpc waits for
// the answer watching the context, but its send does not: a call still
// running a grace (see stuckGrace) after its deadline, or after the
// caller gave up, is stuck sending to a plugin that stopped reading, and
// the plugin's connection is broken so that the send fails and the call
// returns. The call counts for Stop, which waits for it.
func (p *plugin) invoke(ctx context.Context, method string, timeout time.Duration, fn func(context.Context, *plugin) error) (outcome, error) {
	if p.isClosed() {
		return gone, fmt.Errorf("not connected: %w", p.reason())
	}
	if !p.r.track() {
		return lost, ErrClosed
	}
	defer p.r.wg.Done()
	return p.invokeTracked(ctx, method, timeout, fn)
}

// invokeTracked is invoke for a caller Stop already waits for (Stop's own
// Shutdown).
func (p *plugin) invokeTracked(ctx context.Context, method string, timeout time.Duration, fn func(context.Context, *plugin) error) (outcome, error) {
	start := time.Now()
	res := p.r.deadlined(ctx, timeout, func(ctx context.Context) error { return fn(ctx, p) }, func(grace time.Duration) {
		p.close(fmt.Errorf("%s: still sending to the plugin %v after the deadline, so it stopped reading: connection broken", method, grace))
	})
	p.r.cfg.observer.PluginCall(p.fullName(), method, time.Since(start), res.err)
	return p.classify(ctx, res, timeout)
}

// deadlined runs fn on the caller's goroutine with a deadline timeout
// from now (and ctx's) and reports whether the deadline or ctx had ended
// by the time fn returned. fn must return when its context ends, except
// where it cannot (a blocked send): if it is still running stuckGrace
// after its context ended, stuck is called, once, to break it loose. This
// is the one deadline runner of the Runtime, for plugin calls (invoke)
// and the built-in validators (stuck nil: the runtime's own code, which
// watches its context).
func (r *Runtime) deadlined(ctx context.Context, timeout time.Duration, fn func(context.Context) error, stuck func(grace time.Duration)) callResult {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var returned chan struct{}
	stop := func() bool { return true }
	if stuck != nil {
		returned = make(chan struct{})
		grace := stuckGrace(timeout)
		stop = context.AfterFunc(cctx, func() { r.unstick(returned, grace, stuck) })
	}
	err := fn(cctx)
	late := cctx.Err() != nil
	if !stop() {
		close(returned) // unstick is waiting out the grace: the call is back
	}
	return callResult{err: err, late: late}
}

// unstick calls stuck unless returned is closed within grace. It runs on
// the goroutine of context.AfterFunc, counted for Stop; once Stop began,
// it closes every plugin itself.
func (r *Runtime) unstick(returned <-chan struct{}, grace time.Duration, stuck func(time.Duration)) {
	if !r.track() {
		return
	}
	defer r.wg.Done()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-returned:
	case <-t.C:
		stuck(grace)
	}
}

// stuckGrace is how long after its deadline a call may take to return
// before it counts as stuck: a tenth of its timeout, from 250 ms to 1 s,
// so that a call that is merely waiting for a CPU is not taken for one
// that is blocked (on 2 cores at a load of 30 a goroutine waited more
// than 25 ms, a tenth of the status deadline, and its plugin was
// disconnected: docs/performance.md, pod start at density).
func stuckGrace(timeout time.Duration) time.Duration {
	return min(max(timeout/10, minStuckGrace), time.Second)
}

// minStuckGrace is stuckGrace's least.
const minStuckGrace = 250 * time.Millisecond

// lateError is the error of a call that did not answer in time.
func lateError(timeout time.Duration) error {
	return fmt.Errorf("no answer within %v: %w", timeout, context.DeadlineExceeded)
}

// callResult is what a call returned, and whether its deadline (or the
// caller's context) had ended by then.
type callResult struct {
	err  error
	late bool
}

// classify sorts out how a call that returned ended; ctx is the caller's
// context, timeout the call's.
func (p *plugin) classify(ctx context.Context, res callResult, timeout time.Duration) (outcome, error) {
	err := res.err
	switch {
	case err == nil:
		return answered, nil
	case ctx.Err() != nil:
		return abandoned, ctx.Err()
	case res.late || status.Code(err) == codes.DeadlineExceeded:
		// The plugin's side of the deadline may fire first and come
		// back as its error: that is still no answer in time.
		return late, lateError(timeout)
	case isTransportError(err) || p.isClosed() || p.mux.Err() != nil:
		return lost, err
	}
	return answered, err
}

// stake says what a plugin's failure means for the request it was called
// for.
type stake int

const (
	// lifecycle: an error the plugin returns fails the request; a
	// plugin that is late or lost is disconnected (unless its failure
	// policy keeps it connected after a timeout), and the request fails
	// only if its failure policy asks for that.
	lifecycle stake = iota
	// validation: every failure fails the request (a plugin gone before
	// its turn is not asked, so it does not fail it); late or lost
	// plugins are disconnected as for lifecycle requests.
	validation
	// query: nothing fails the request or disconnects the plugin for
	// being late; the caller uses the error as the reason the plugin's
	// part is stale.
	query
)

// verdict is what the failure policy made of one call.
type verdict int

const (
	useAnswer verdict = iota // the call succeeded
	skip                     // the request goes on without this plugin
	fail                     // the request fails with the error
)

// settle applies the failure policy to the outcome of a call of method on
// p and returns what the request does, with an error naming the plugin
// for skip and fail (the caller's own context error, when it gave up).
func (p *plugin) settle(method string, s stake, o outcome, err error) (verdict, error) {
	if o == answered && err == nil {
		return useAnswer, nil
	}
	perr := &PluginError{Plugin: p.fullName(), Method: method, Err: err}
	switch o {
	case answered:
		if s == query {
			return skip, perr
		}
		return fail, perr
	case abandoned:
		// The caller gave up: not the plugin's fault, so it stays, and
		// the error is the caller's own; the log says where it was.
		p.logger().Info("the caller gave up while the plugin was handling the request",
			"event", method, "error", err)
		return fail, fmt.Errorf("%s: %w", method, err)
	case gone:
		return skip, perr
	}
	if s == query {
		if o == lost {
			perr.Err = fmt.Errorf("connection lost: %w", err)
		}
		return skip, perr
	}
	policy := p.failurePolicy()
	if o == late && policy.GetKeepConnected() && !p.isClosed() {
		p.logger().Warn("plugin timed out; keeping it connected as its failure policy asks",
			"event", method, "error", err)
	} else {
		p.close(fmt.Errorf("failed to handle %s: %w", method, err))
	}
	if s == validation || policy.GetFailRequest() {
		return fail, perr
	}
	return skip, perr
}

// errUnimplemented reports whether a plugin answered UNIMPLEMENTED.
func errUnimplemented(err error) bool {
	return status.Code(err) == codes.Unimplemented
}
