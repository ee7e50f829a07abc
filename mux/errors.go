package mux

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by operations on a closed Mux or logical connection.
var ErrClosed = errors.New("mux: closed")

// ErrReadLimit is wrapped by the error that closes a trunk when a logical
// connection has more unread data buffered than the configured limit.
var ErrReadLimit = errors.New("mux: read limit exceeded")

// FrameTooLargeError reports an incoming frame header whose length exceeds
// MaxPayload. The trunk is closed: the framing has no resynchronization
// point, so nothing after such a header can be trusted.
type FrameTooLargeError struct {
	Conn   ConnID
	Length uint32
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("mux: frame for conn %d announces %d payload bytes, limit is %d", e.Conn, e.Length, MaxPayload)
}

// UnknownConnError reports a frame for a connection id that was not opened.
type UnknownConnError struct {
	Conn ConnID
}

func (e *UnknownConnError) Error() string {
	return fmt.Sprintf("mux: frame for conn %d, which is not open (garbage on the wire?)", e.Conn)
}
