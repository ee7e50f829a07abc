package net

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
)

// NewFdConn returns a net.Conn for the socket with file descriptor fd. The
// connection owns a duplicate of fd; fd itself is closed.
func NewFdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "fd #"+strconv.Itoa(fd))
	if f == nil {
		return nil, fmt.Errorf("net: fd #%d is not a valid file descriptor", fd)
	}
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("net: a connection of fd #%d: %w", fd, err)
	}
	return conn, nil
}

// connListener is a net.Listener over one existing connection.
type connListener struct {
	conn      net.Conn
	next      chan net.Conn // holds conn until the first Accept
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// NewConnListener returns a net.Listener whose first Accept returns conn.
// Later Accepts block until the listener is closed, then return io.EOF.
// Closing the listener closes conn.
func NewConnListener(conn net.Conn) net.Listener {
	l := &connListener{conn: conn, next: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.next <- conn
	return l
}

// Accept returns the connection the first time, then blocks until Close.
func (l *connListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, io.EOF
	default:
	}
	select {
	case conn := <-l.next:
		return conn, nil
	case <-l.closed:
		return nil, io.EOF
	}
}

// Close closes the listener and the connection.
func (l *connListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.closeErr = l.conn.Close()
	})
	return l.closeErr
}

// Addr returns the local address of the connection.
func (l *connListener) Addr() net.Addr { return l.conn.LocalAddr() }
