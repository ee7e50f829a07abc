package mux

import (
	"net"
	"sync"
)

// listener hands out one logical connection once, for ttrpc.Server.Serve.
type listener struct {
	c         *conn
	mu        sync.Mutex
	accepted  bool
	closed    chan struct{}
	closeOnce sync.Once
}

var _ net.Listener = (*listener)(nil)

func newListener(c *conn) *listener {
	return &listener{c: c, closed: make(chan struct{})}
}

// Accept returns the logical connection on the first call. Later calls
// block until the listener or the Mux is closed, then return ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	first := !l.accepted
	l.accepted = true
	l.mu.Unlock()
	if first {
		select {
		case <-l.closed:
			return nil, ErrClosed
		default:
			return l.c, nil
		}
	}
	select {
	case <-l.closed:
	case <-l.c.mux.done:
	}
	return nil, ErrClosed
}

// Close stops Accept; it does not close the connection already returned.
func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the trunk's local address.
func (l *listener) Addr() net.Addr { return l.c.LocalAddr() }
