package mux_test

import (
	"io"
	"testing"
)

// BenchmarkRoundTrip measures a 611-byte write on one end and the read on
// the other end, and the echo back: the mux part of one NRI hook call.
func BenchmarkRoundTrip(b *testing.B) {
	a, c := socketPair(b)
	_, a1, _ := newMux(b, a)
	_, c1, _ := newMux(b, c)
	msg := make([]byte, 611)
	go func() {
		buf := make([]byte, len(msg))
		for {
			if _, err := io.ReadFull(c1, buf); err != nil {
				return
			}
			if _, err := c1.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, len(msg))
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := a1.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(a1, buf); err != nil {
			b.Fatal(err)
		}
	}
}
