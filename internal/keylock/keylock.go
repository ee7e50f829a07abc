package keylock

import "sync"

// Locks is a set of mutexes by key. The zero value is ready to use; a
// Locks must not be copied after first use.
type Locks struct {
	mu    sync.Mutex // guards locks
	locks map[string]*entry
}

// entry is one key's mutex, with the number of holders and waiters.
type entry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key's mutex, waiting while another holds it, and returns the
// function that unlocks it (to be called once).
func (l *Locks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	e, ok := l.locks[key]
	if !ok {
		e = &entry{}
		if l.locks == nil {
			l.locks = map[string]*entry{}
		}
		l.locks[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// Len returns how many keys have a holder or a waiter.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
