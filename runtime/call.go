package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
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
func (p *plugin) invoke(ctx context.Context, method string, timeout time.Duration, fn func(context.Context, *plugin) error) (outcome, error) {
	return p.invokeCounted(ctx, method, timeout, fn, p.r.track)
}

// invokeCounted is invoke with count, which counts the call's goroutine
// for Stop or reports that the Runtime stopped: Stop itself counts the
// Shutdown it sends directly, since it waits only afterwards.
func (p *plugin) invokeCounted(ctx context.Context, method string, timeout time.Duration, fn func(context.Context, *plugin) error, count func() bool) (outcome, error) {
	if p.isClosed() {
		return gone, fmt.Errorf("not connected: %w", p.reason())
	}
	if n := p.lateCalls.Load(); n >= maxLateCalls {
		return late, fmt.Errorf("%d earlier requests are still unanswered", n)
	}
	if !count() {
		return lost, ErrClosed
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	c := getPendingCall()
	go p.run(c, cctx, cancel, method, fn)
	select {
	case res := <-c.done:
		putPendingCall(c)
		return p.classify(ctx, res, timeout)
	case <-cctx.Done():
	}
	p.lateCalls.Add(1)
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		// It finished just now: its result is on its way.
		p.lateCalls.Add(-1)
		res := <-c.done
		putPendingCall(c)
		return p.classify(ctx, res, timeout)
	}
	// The call's goroutine owns c from here.
	if ctx.Err() != nil {
		return abandoned, ctx.Err()
	}
	return late, lateError(timeout)
}

// run makes the call of invoke on its own goroutine and hands the result
// over through c.
func (p *plugin) run(c *pendingCall, ctx context.Context, cancel context.CancelFunc, method string, fn func(context.Context, *plugin) error) {
	defer p.r.wg.Done()
	api.PresizeStack() // a fresh goroutine about to encode nested messages
	start := time.Now()
	err := fn(ctx, p)
	res := callResult{err: err, late: ctx.Err() != nil}
	p.r.cfg.observer.PluginCall(p.fullName(), method, time.Since(start), err)
	if c.state.CompareAndSwap(callRunning, callFinished) {
		// The send is the last use of c: the waiter takes the result
		// and recycles c.
		c.done <- res
	} else {
		// The waiter gave up on it: nobody reads the result, and c is
		// this goroutine's to recycle.
		p.lateCalls.Add(-1)
		putPendingCall(c)
	}
	cancel() // only now: the waiter must not take it for the deadline
}

// lateError is the error of a call that did not answer in time.
func lateError(timeout time.Duration) error {
	return fmt.Errorf("no answer within %v: %w", timeout, context.DeadlineExceeded)
}

// pendingCall is the hand-over between a call's goroutine and its waiter.
// Whoever moves state from callRunning owns what follows: the goroutine
// (callFinished) sends the result, after which the waiter recycles c; the
// waiter (callAbandoned) leaves, and the goroutine recycles c.
type pendingCall struct {
	done  chan callResult // buffered: the goroutine never waits on it
	state atomic.Int32    // callRunning, then callFinished or callAbandoned
}

// pendingCalls recycles pendingCalls, which every call to a plugin needs.
var pendingCalls = sync.Pool{New: func() any { return &pendingCall{done: make(chan callResult, 1)} }}

func getPendingCall() *pendingCall { return pendingCalls.Get().(*pendingCall) }

// putPendingCall recycles c once its result has been taken.
func putPendingCall(c *pendingCall) {
	c.state.Store(callRunning)
	pendingCalls.Put(c)
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
