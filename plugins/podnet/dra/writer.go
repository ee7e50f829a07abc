package dra

import (
	"sync"

	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
)

// statusWrite is one claim status to write.
type statusWrite struct {
	uid string
	st  *resourceapply.ResourceClaimStatusApplyConfiguration
}

// writer writes claim statuses in order, on one goroutine of its own, so
// that RunPodSandbox (bound by the runtime's request timeout, 2 s by
// default) never waits for the API server, and a detach's status never
// overtakes its attach's.
type writer struct {
	write func(statusWrite)

	mu      sync.Mutex
	queue   []statusWrite
	pending int // queued or being written
	closed  bool
	idle    *sync.Cond    // signalled when pending reaches 0
	wake    chan struct{} // capacity 1: the queue has work, or it closed
	done    chan struct{} // closed when run returns
}

func newWriter(write func(statusWrite)) *writer {
	w := &writer{write: write, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.idle = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// add queues a write; after close it is dropped.
func (w *writer) add(sw statusWrite) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, sw)
	w.pending++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 {
			if w.closed {
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		sw := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.write(sw)
		w.mu.Lock()
		w.pending--
		if w.pending == 0 {
			w.idle.Broadcast()
		}
		w.mu.Unlock()
	}
}

// wait returns when every write queued so far is done.
func (w *writer) wait() {
	w.mu.Lock()
	for w.pending > 0 {
		w.idle.Wait()
	}
	w.mu.Unlock()
}

// close writes what is queued, then stops the goroutine and waits for it.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}
