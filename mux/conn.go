package mux

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// shrinkCap is the buffer capacity above which an emptied receive buffer is
// released instead of kept for reuse.
const shrinkCap = 1 << 20

// conn is one logical connection: a byte stream reassembled from frames.
type conn struct {
	mux *Mux
	id  ConnID

	notify chan struct{} // signalled when data, an error or a deadline change arrives

	mu            sync.Mutex // guards the fields below
	buf           []byte     // received, unread bytes are buf[off:]
	off           int
	err           error // sticky read error once the stream ended
	closed        bool  // closed locally: incoming frames are discarded
	readDeadline  time.Time
	writeDeadline time.Time
}

var _ net.Conn = (*conn)(nil)

func newConn(m *Mux, id ConnID) *conn {
	return &conn{mux: m, id: id, notify: make(chan struct{}, 1)}
}

// wake signals a reader waiting in Read, without blocking.
func (c *conn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// receive moves the next n payload bytes from r into the connection's
// buffer. It runs on the Mux's read loop only.
func (c *conn) receive(r *bufio.Reader, n int) error {
	for n > 0 {
		k := min(n, r.Size())
		p, err := r.Peek(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the header promised more
			}
			return readError(fmt.Sprintf("frame payload for conn %d", c.id), err)
		}
		c.mu.Lock()
		switch {
		case c.closed:
			// Closed locally: the peer does not know yet; drop the bytes.
		case len(c.buf)-c.off+k > c.mux.cfg.readLimit:
			unread := len(c.buf) - c.off
			c.mu.Unlock()
			return fmt.Errorf("%w: conn %d holds %d unread bytes and got %d more, limit is %d",
				ErrReadLimit, c.id, unread, k, c.mux.cfg.readLimit)
		default:
			if c.off > 0 && c.off == len(c.buf) {
				c.buf, c.off = c.buf[:0], 0
			} else if c.off > cap(c.buf)/2 {
				c.buf = append(c.buf[:0], c.buf[c.off:]...)
				c.off = 0
			}
			c.buf = append(c.buf, p...)
		}
		c.mu.Unlock()
		c.wake()
		if _, err := r.Discard(k); err != nil {
			return readError("frame payload", err)
		}
		n -= k
	}
	return nil
}

// shutdown ends the stream with err once the buffered bytes are read.
func (c *conn) shutdown(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.wake()
}

// Read reads received bytes, blocking until some arrive, the stream ends or
// the read deadline passes. Frame boundaries are not preserved.
func (c *conn) Read(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if c.off < len(c.buf) {
			n := copy(p, c.buf[c.off:])
			c.off += n
			if c.off == len(c.buf) {
				if cap(c.buf) > shrinkCap {
					c.buf = nil
				} else {
					c.buf = c.buf[:0]
				}
				c.off = 0
			}
			c.mu.Unlock()
			return n, nil
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return 0, err
		}
		deadline := c.readDeadline
		c.mu.Unlock()

		var expired <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-c.notify:
		case <-expired:
		}
	}
}

// Write sends p to the peer's logical connection of the same id, as one
// frame (or several, if p exceeds MaxPayload).
func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	closed, deadline := c.closed, c.writeDeadline
	c.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	if err := c.mux.Err(); err != nil {
		return 0, err
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	return c.mux.write(c.id, p)
}

// Close closes the logical connection locally. Nothing is sent; frames the
// peer still sends for it are discarded.
func (c *conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.buf, c.off = nil, 0
	if c.err == nil {
		c.err = ErrClosed
	}
	c.mu.Unlock()
	c.wake()
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.mux.trunk.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr { return c.mux.trunk.RemoteAddr() }

// SetDeadline sets both the read and the write deadline.
func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDeadline = t, t
	c.mu.Unlock()
	c.wake()
	return nil
}

// SetReadDeadline sets the deadline for Read; a zero time means none.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	c.wake()
	return nil
}

// SetWriteDeadline sets the deadline for Write. Because frames of all
// logical connections share the trunk, a write that has started is not
// interrupted; the deadline is checked before the write begins.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDeadline = t
	c.mu.Unlock()
	return nil
}
