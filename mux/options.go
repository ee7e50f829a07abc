package mux

import (
	"fmt"
	"time"
)

// DefaultReadLimit is the default for WithReadLimit.
const DefaultReadLimit = 64 << 20

// Option configures a Mux.
type Option func(*config) error

type config struct {
	readLimit    int
	readBuffer   int
	writeTimeout time.Duration
}

// WithReadLimit bounds how many received but unread bytes one logical
// connection may hold. A peer that sends more than that while nobody reads
// breaks the trunk with an error wrapping ErrReadLimit. The default is
// DefaultReadLimit (64 MiB); it must be at least MaxPayload.
func WithReadLimit(n int) Option {
	return func(c *config) error {
		if n < MaxPayload {
			return fmt.Errorf("mux: read limit %d is below the maximum frame payload %d", n, MaxPayload)
		}
		c.readLimit = n
		return nil
	}
}

// WithReadBuffer sets the size of the buffer the trunk is read through
// (default 64 KiB). Larger buffers mean fewer read system calls for large
// messages.
func WithReadBuffer(n int) Option {
	return func(c *config) error {
		if n < HeaderSize {
			return fmt.Errorf("mux: read buffer %d is smaller than a frame header", n)
		}
		c.readBuffer = n
		return nil
	}
}

// WithWriteTimeout bounds how long writing one frame to the trunk may take
// (default: no bound). A peer that stops reading, so that a write cannot
// finish in time, breaks the trunk with an error wrapping
// os.ErrDeadlineExceeded: frames of all logical connections share the
// trunk, so one stuck write would block them all. A watchdog checks every
// quarter of the timeout, so a stuck write is noticed within 1.25 times
// the timeout; the write path itself pays only two atomic stores.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("mux: negative write timeout %v", d)
		}
		c.writeTimeout = d
		return nil
	}
}
