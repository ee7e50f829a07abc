package runtime

import (
	"context"
	"fmt"
	"sync/atomic"
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
	// lost: the connection broke, or was already closed.
	lost
	// abandoned: the caller's context ended first.
	abandoned
)

// maxLateCalls bounds the calls a plugin may leave unanswered past their
// deadline: each holds a goroutine until the plugin answers or the
// connection's write timeout breaks it. Further calls fail at once as late.
const maxLateCalls = 8

// invoke makes one call to p under timeout and returns by the deadline,
// even when the call is stuck sending to a plugin that stopped reading
// (ttrpc's send does not watch the context). A call still running at the
// deadline is left to finish in the background, on a goroutine Stop waits
// for; it ends when the plugin answers or the connection's write timeout
// (the request timeout) breaks the connection.
func (p *plugin) invoke(ctx context.Context, method string, timeout time.Duration, fn func(context.Context) error) (outcome, error) {
	return p.invokeCounted(ctx, method, timeout, fn, p.r.track)
}

// invokeCounted is invoke with count, which counts the call's goroutine
// for Stop or reports that the Runtime stopped: Stop itself counts the
// Shutdown it sends directly, since it waits only afterwards.
func (p *plugin) invokeCounted(ctx context.Context, method string, timeout time.Duration, fn func(context.Context) error, count func() bool) (outcome, error) {
	if p.isClosed() {
		return lost, fmt.Errorf("not connected: %w", p.reason())
	}
	if n := p.lateCalls.Load(); n >= maxLateCalls {
		return late, fmt.Errorf("%d earlier requests are still unanswered", n)
	}
	if !count() {
		return lost, ErrClosed
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	start := time.Now()
	c := &pendingCall{done: make(chan callResult, 1)}
	go func() {
		defer p.r.wg.Done()
		err := fn(cctx)
		res := callResult{err: err, late: cctx.Err() != nil}
		p.r.cfg.observer.PluginCall(p.fullName(), method, time.Since(start), err)
		c.done <- res
		if !c.state.CompareAndSwap(callRunning, callFinished) {
			p.lateCalls.Add(-1) // the waiter gave up on it
		}
		cancel() // only now: the waiter must not take it for the deadline
	}()
	lateErr := fmt.Errorf("no answer within %v: %w", timeout, context.DeadlineExceeded)
	select {
	case res := <-c.done:
		return p.classify(ctx, res, lateErr)
	case <-cctx.Done():
	}
	p.lateCalls.Add(1)
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		p.lateCalls.Add(-1) // it finished just now
		return p.classify(ctx, <-c.done, lateErr)
	}
	if ctx.Err() != nil {
		return abandoned, ctx.Err()
	}
	return late, lateErr
}

// pendingCall is the hand-over between a call's goroutine and its waiter.
type pendingCall struct {
	done  chan callResult
	state atomic.Int32 // callRunning, then callFinished or callAbandoned
}

// callResult is what a call returned, and whether its deadline (or the
// caller's context) had ended by then.
type callResult struct {
	err  error
	late bool
}

const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// classify sorts out how a call that returned ended; ctx is the caller's
// context. A late call's error is lateErr.
func (p *plugin) classify(ctx context.Context, res callResult, lateErr error) (outcome, error) {
	err := res.err
	switch {
	case err == nil:
		return answered, nil
	case ctx.Err() != nil:
		return abandoned, err
	case res.late || status.Code(err) == codes.DeadlineExceeded:
		// The plugin's side of the deadline may fire first and come
		// back as its error: that is still no answer in time.
		return late, lateErr
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
	// validation: every failure fails the request; late or lost
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
// for skip and fail.
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
		// The caller gave up: not the plugin's fault, so it stays.
		return fail, perr
	}
	if s == query {
		if o == lost {
			perr.Err = fmt.Errorf("connection lost: %w", err)
		}
		return skip, perr
	}
	policy := p.failurePolicy()
	if o == late && policy.GetKeepConnected() {
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
