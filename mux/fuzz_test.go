package mux_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/nrinet/nrinet/mux"
)

// reference decodes wire sequentially, independently of the Mux: the byte
// streams of conns 1 and 2 for the frames that are valid, and whether the
// input ended cleanly at a frame boundary.
func reference(wire []byte) (streams map[mux.ConnID][]byte, clean bool) {
	streams = map[mux.ConnID][]byte{}
	for len(wire) > 0 {
		if len(wire) < mux.HeaderSize {
			return streams, false
		}
		id := mux.ConnID(binary.BigEndian.Uint32(wire))
		n := binary.BigEndian.Uint32(wire[4:])
		if (id != 1 && id != 2) || n > mux.MaxPayload || uint64(len(wire)-mux.HeaderSize) < uint64(n) {
			return streams, false
		}
		streams[id] = append(streams[id], wire[mux.HeaderSize:mux.HeaderSize+int(n)]...)
		wire = wire[mux.HeaderSize+int(n):]
	}
	return streams, true
}

// FuzzReader feeds arbitrary bytes to a Mux's frame reader and checks that
// each logical connection yields exactly the bytes a reference decoder
// finds, then an error that is io.EOF only for input ending on a frame
// boundary.
func FuzzReader(f *testing.F) {
	f.Add(frame(1, []byte("hello")))
	f.Add(append(frame(2, []byte("a")), frame(1, []byte("b"))...))
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 0})
	f.Add(frame(1, nil)[:5])
	f.Fuzz(func(t *testing.T, wire []byte) {
		a, raw := socketPair(t)
		m, c1, c2 := newMux(t, a)
		go func() {
			raw.Write(wire)
			raw.Close()
		}()
		want, clean := reference(wire)
		for id, c := range map[mux.ConnID]io.Reader{1: c1, 2: c2} {
			got, err := io.ReadAll(c)
			if !bytes.Equal(got, want[id]) {
				t.Fatalf("conn %d: got %d bytes, reference decoder has %d", id, len(got), len(want[id]))
			}
			if clean && err != nil {
				t.Fatalf("conn %d: clean input ended with %v, want EOF", id, err)
			}
			if !clean && (err == nil || m.Err() == io.EOF) {
				t.Fatalf("conn %d: malformed input ended with %v (trunk: %v), want a protocol error", id, err, m.Err())
			}
		}
	})
}
