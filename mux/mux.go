package mux

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Mux multiplexes logical connections over one trunk connection.
//
// Open or Listen every connection id the peer may use, then call Start to
// begin reading. Close closes the trunk and every logical connection.
type Mux struct {
	trunk net.Conn
	cfg   config

	writeMu sync.Mutex // serializes frames on the trunk

	mu      sync.Mutex // guards conns, started and err
	conns   map[ConnID]*conn
	started bool
	err     error

	closeOnce sync.Once
	done      chan struct{}
	readerWG  sync.WaitGroup

	// writingSince is when the frame being written started (Unix ns),
	// 0 when no write is in progress.
	writingSince atomic.Int64
}

// New returns a Mux over trunk. It does not read from trunk until Start.
func New(trunk net.Conn, opts ...Option) (*Mux, error) {
	if trunk == nil {
		return nil, errors.New("mux: nil trunk connection")
	}
	m := &Mux{
		trunk: trunk,
		cfg:   config{readLimit: DefaultReadLimit, readBuffer: 64 << 10},
		conns: make(map[ConnID]*conn),
		done:  make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(&m.cfg); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Trunk returns the underlying connection.
func (m *Mux) Trunk() net.Conn { return m.trunk }

// Open returns the logical connection with the given id, creating it if
// needed. Opening is local: nothing is sent to the peer.
func (m *Mux) Open(id ConnID) (net.Conn, error) {
	if id == ReservedConnID {
		return nil, fmt.Errorf("mux: conn id %d is reserved", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	c, ok := m.conns[id]
	if !ok {
		c = newConn(m, id)
		m.conns[id] = c
	}
	return c, nil
}

// Listen returns a listener whose first Accept returns the logical
// connection id and whose later Accepts block until the listener or the
// Mux is closed. It lets a ttrpc server serve one logical connection.
func (m *Mux) Listen(id ConnID) (net.Listener, error) {
	c, err := m.Open(id)
	if err != nil {
		return nil, err
	}
	return newListener(c.(*conn)), nil
}

// Start begins reading frames from the trunk. Frames for connection ids
// that have not been opened by then close the trunk with an
// *UnknownConnError. Start is idempotent.
func (m *Mux) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.err != nil {
		return
	}
	m.started = true
	m.readerWG.Add(1)
	go m.readLoop()
	if m.cfg.writeTimeout > 0 {
		m.readerWG.Add(1)
		go m.writeWatchdog()
	}
}

// writeWatchdog breaks the trunk when a frame has been in the write for
// longer than the write timeout: the peer stopped reading. Watching from
// here keeps the write path free of per-write deadline updates.
func (m *Mux) writeWatchdog() {
	defer m.readerWG.Done()
	tick := time.NewTicker(max(m.cfg.writeTimeout/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return
		case now := <-tick.C:
			since := m.writingSince.Load()
			if since != 0 && now.Sub(time.Unix(0, since)) > m.cfg.writeTimeout {
				m.fail(fmt.Errorf("mux: writing a frame took longer than %v, the peer stopped reading: %w",
					m.cfg.writeTimeout, os.ErrDeadlineExceeded))
				return
			}
		}
	}
}

// Done is closed when the Mux is closed, by Close or by a trunk error.
func (m *Mux) Done() <-chan struct{} { return m.done }

// Err returns why the Mux was closed: io.EOF when the peer closed the trunk,
// ErrClosed after Close, or the protocol or I/O error that broke the trunk.
// It returns nil while the Mux is open.
func (m *Mux) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close closes the trunk and every logical connection. Reads then fail with
// ErrClosed.
func (m *Mux) Close() error {
	m.fail(ErrClosed)
	return nil
}

// fail records err as the reason for closing (the first reason wins), closes
// the trunk and wakes every logical connection.
func (m *Mux) fail(err error) {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.err = err
		conns := make([]*conn, 0, len(m.conns))
		for _, c := range m.conns {
			conns = append(conns, c)
		}
		m.mu.Unlock()
		m.trunk.Close()
		for _, c := range conns {
			c.shutdown(err)
		}
		close(m.done)
	})
}

// Wait blocks until the read loop has exited after Close or a trunk error.
func (m *Mux) Wait() {
	<-m.done
	m.readerWG.Wait()
}

// readLoop reads frames and appends their payloads to the logical
// connections' buffers until the trunk fails.
func (m *Mux) readLoop() {
	defer m.readerWG.Done()
	r := bufio.NewReaderSize(m.trunk, m.cfg.readBuffer)
	var hdr [HeaderSize]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			m.fail(readError("frame header", err))
			return
		}
		h, err := ParseHeader(hdr[:])
		if err != nil {
			m.fail(err)
			return
		}
		m.mu.Lock()
		c := m.conns[h.Conn]
		m.mu.Unlock()
		if c == nil {
			m.fail(&UnknownConnError{Conn: h.Conn})
			return
		}
		if err := c.receive(r, int(h.Length)); err != nil {
			m.fail(err)
			return
		}
	}
}

// readError maps the error of a trunk read to the reason recorded for it.
func readError(what string, err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("mux: trunk closed in the middle of a %s: %w", what, err)
	case errors.Is(err, net.ErrClosed):
		return ErrClosed
	default:
		return fmt.Errorf("mux: reading %s: %w", what, err)
	}
}

// write sends b as frames of conn id, each header and payload in one write.
func (m *Mux) write(id ConnID, b []byte) (int, error) {
	var hdr [HeaderSize]byte
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	written := 0
	for {
		n := min(len(b)-written, MaxPayload)
		putHeader(hdr[:], Header{Conn: id, Length: uint32(n)})
		bufs := net.Buffers{hdr[:], b[written : written+n]}
		if m.cfg.writeTimeout > 0 {
			m.writingSince.Store(time.Now().UnixNano()) // watched by writeWatchdog
		}
		_, err := bufs.WriteTo(m.trunk)
		m.writingSince.Store(0)
		if err != nil {
			werr := fmt.Errorf("mux: writing frame for conn %d: %w", id, err)
			if errors.Is(err, net.ErrClosed) {
				if merr := m.Err(); merr != nil {
					werr = merr
				}
			}
			m.fail(werr)
			return written, werr
		}
		written += n
		if written == len(b) {
			return written, nil
		}
	}
}
