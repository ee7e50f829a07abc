package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Defaults of the options.
const (
	DefaultRetryMin = 100 * time.Millisecond
	DefaultRetryMax = 10 * time.Second
)

// key is the queue's only item: there is one thing to reconcile.
const key = "sync"

// Option configures a Runner.
type Option func(*config) error

type config struct {
	retryMin, retryMax time.Duration
	resync             time.Duration
}

// WithRetry sets the delay before the first retry of a failed sync, which
// doubles with each failure in a row up to max (defaults DefaultRetryMin
// and DefaultRetryMax).
func WithRetry(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min {
			return fmt.Errorf("reconcile: retry delays %v to %v: want 0 < min <= max", min, max)
		}
		c.retryMin, c.retryMax = min, max
		return nil
	}
}

// WithResync makes the Runner sync again d after each sync, poked or not
// (default: only when poked or retrying).
func WithResync(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("reconcile: resync period %v: want > 0", d)
		}
		c.resync = d
		return nil
	}
}

// Runner runs a sync function, see the package documentation.
type Runner struct {
	name   string
	sync   func(context.Context) error
	resync time.Duration
	queue  workqueue.TypedRateLimitingInterface[string]

	mu  sync.Mutex
	ran bool
}

// New returns a Runner of sync, named name in its errors. A Runner runs
// once (Run); Poke may be called before Run, and the first sync runs
// anyway.
func New(name string, sync func(context.Context) error, opts ...Option) (*Runner, error) {
	c := config{retryMin: DefaultRetryMin, retryMax: DefaultRetryMax}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](c.retryMin, c.retryMax)
	return &Runner{
		name: name, sync: sync, resync: c.resync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}, nil
}

// Poke asks for a sync: at once if none is running, else after the one
// that is. Pokes before that sync starts are one.
func (r *Runner) Poke() { r.queue.Add(key) }

// Run syncs at once, then whenever poked, retrying a failure, until ctx
// is done; then it waits for the sync that runs, if any, and returns
// nil. A second call returns an error.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	ran := r.ran
	r.ran = true
	r.mu.Unlock()
	if ran {
		return errors.New(r.name + ": Run called twice")
	}
	stopped := make(chan struct{})
	go func() { // ends with ctx; waited for below
		defer close(stopped)
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	defer func() { <-stopped }()
	r.Poke()
	for r.next(ctx) {
	}
	return nil
}

// next runs one sync when the queue hands the key out, and says whether
// to go on.
func (r *Runner) next(ctx context.Context) bool {
	k, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(k)
	if ctx.Err() != nil { // shutting down with the key queued
		return false
	}
	if err := r.sync(ctx); err != nil {
		if ctx.Err() == nil {
			r.queue.AddRateLimited(k)
		}
		return true
	}
	r.queue.Forget(k)
	if r.resync > 0 {
		r.queue.AddAfter(k, r.resync)
	}
	return true
}

// Retries returns the number of failed syncs in a row so far.
func (r *Runner) Retries() int { return r.queue.NumRequeues(key) }
