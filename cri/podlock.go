package cri

import "sync"

// podLocks serializes the changes to one sandbox (stop, remove, status
// persistence) without ordering different sandboxes.
type podLocks struct {
	mu    sync.Mutex // guards locks
	locks map[string]*podLock
}

// podLock is a reference-counted per-sandbox mutex.
type podLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks the sandbox's mutex and returns the unlock function.
func (l *podLocks) lock(id string) func() {
	l.mu.Lock()
	pl, ok := l.locks[id]
	if !ok {
		pl = &podLock{}
		if l.locks == nil {
			l.locks = map[string]*podLock{}
		}
		l.locks[id] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.mu.Lock()
	return func() {
		pl.mu.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
