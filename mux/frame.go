package mux

import (
	"encoding/binary"
	"fmt"
)

// ConnID identifies a logical connection on a trunk.
type ConnID uint32

// Connection ids used by NRI.
const (
	// ReservedConnID is never used for a connection.
	ReservedConnID ConnID = 0
	// PluginServiceConn carries the ttrpc session in which the runtime is
	// the client and the plugin serves the Plugin service.
	PluginServiceConn ConnID = 1
	// RuntimeServiceConn carries the ttrpc session in which the plugin is
	// the client and the runtime serves the Runtime service.
	RuntimeServiceConn ConnID = 2
)

const (
	// HeaderSize is the size of a frame header in bytes.
	HeaderSize = 8
	// MaxPayload is the largest payload a frame may carry: a ttrpc header
	// (10 bytes) plus the largest ttrpc message (4 MiB). Longer frames are
	// never written and are rejected when read.
	MaxPayload = 10 + 4<<20
)

// Header is a decoded frame header.
type Header struct {
	Conn   ConnID
	Length uint32
}

// putHeader encodes h into b, which must hold HeaderSize bytes.
func putHeader(b []byte, h Header) {
	binary.BigEndian.PutUint32(b[0:4], uint32(h.Conn))
	binary.BigEndian.PutUint32(b[4:8], h.Length)
}

// ParseHeader decodes and checks a frame header. It fails for a header of
// the wrong size, for the reserved connection id and for a payload length
// above MaxPayload, before anything would be allocated for the payload.
func ParseHeader(b []byte) (Header, error) {
	if len(b) != HeaderSize {
		return Header{}, fmt.Errorf("mux: frame header is %d bytes, want %d", len(b), HeaderSize)
	}
	h := Header{
		Conn:   ConnID(binary.BigEndian.Uint32(b[0:4])),
		Length: binary.BigEndian.Uint32(b[4:8]),
	}
	if h.Conn == ReservedConnID {
		return h, fmt.Errorf("mux: frame for reserved conn id 0 (header % x)", b)
	}
	if h.Length > MaxPayload {
		return h, &FrameTooLargeError{Conn: h.Conn, Length: h.Length}
	}
	return h, nil
}
