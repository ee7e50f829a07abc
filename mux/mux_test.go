package mux_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/mux"
)

// socketPair returns the two ends of a connected unix stream socket pair.
func socketPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	return conns[0], conns[1]
}

// newMux returns a started Mux over c with conns 1 and 2 open.
func newMux(t testing.TB, c net.Conn, opts ...mux.Option) (*mux.Mux, net.Conn, net.Conn) {
	t.Helper()
	m, err := mux.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := m.Open(mux.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(func() { m.Close(); m.Wait() })
	return m, c1, c2
}

func frame(id uint32, payload []byte) []byte {
	b := make([]byte, mux.HeaderSize+len(payload))
	binary.BigEndian.PutUint32(b[0:4], id)
	binary.BigEndian.PutUint32(b[4:8], uint32(len(payload)))
	copy(b[8:], payload)
	return b
}

func TestMux_RoundTrip(t *testing.T) {
	a, b := socketPair(t)
	_, a1, a2 := newMux(t, a)
	_, b1, b2 := newMux(t, b)

	for _, tc := range []struct {
		name string
		w, r net.Conn
		data []byte
	}{
		{"conn1 a to b", a1, b1, []byte("hello plugin")},
		{"conn2 b to a", b2, a2, []byte("hello runtime")},
		{"conn1 b to a", b1, a1, bytes.Repeat([]byte{7}, 100000)},
		{"empty", a2, b2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.w.Write(tc.data); err != nil {
				t.Fatal(err)
			}
			if len(tc.data) == 0 {
				return
			}
			got := make([]byte, len(tc.data))
			if _, err := io.ReadFull(tc.r, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("got %d bytes, differing from the %d sent", len(got), len(tc.data))
			}
		})
	}
}

func TestMux_FrameLayout(t *testing.T) {
	a, raw := socketPair(t)
	_, _, a2 := newMux(t, a)

	small := bytes.Repeat([]byte("x"), 100)
	if _, err := a2.Write(small); err != nil {
		t.Fatal(err)
	}
	want := frame(2, small)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(raw, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("frame = % x..., want % x...", got[:12], want[:12])
	}

	// A write above MaxPayload is split into frames of at most MaxPayload.
	big := make([]byte, mux.MaxPayload+5)
	go a2.Write(big)
	var hdr [mux.HeaderSize]byte
	var sizes []uint32
	for total := 0; total < len(big); {
		if _, err := io.ReadFull(raw, hdr[:]); err != nil {
			t.Fatal(err)
		}
		h, err := mux.ParseHeader(hdr[:])
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, h.Length)
		if _, err := io.CopyN(io.Discard, raw, int64(h.Length)); err != nil {
			t.Fatal(err)
		}
		total += int(h.Length)
	}
	if len(sizes) != 2 || sizes[0] != mux.MaxPayload || sizes[1] != 5 {
		t.Fatalf("frame sizes = %v, want [%d 5]", sizes, mux.MaxPayload)
	}
}

func TestMux_ReassemblesArbitraryFrames(t *testing.T) {
	a, raw := socketPair(t)
	_, a1, a2 := newMux(t, a)

	msg := bytes.Repeat([]byte("0123456789"), 1000)
	var wire []byte
	for i, size := 0, 1; i < len(msg); size = size*3 + 1 {
		end := min(i+size, len(msg))
		wire = append(wire, frame(1, msg[i:end])...)
		wire = append(wire, frame(2, []byte{byte(i)})...)
		i = end
	}
	go raw.Write(wire)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(a1, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("conn 1 stream differs from what was framed")
	}
	var one [1]byte
	if _, err := io.ReadFull(a2, one[:]); err != nil || one[0] != 0 {
		t.Fatalf("conn 2 first byte = %v, %v", one[0], err)
	}
}

func TestMux_BadInputBreaksTrunk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wire  []byte
		check func(error) bool
	}{
		{
			name: "oversized length",
			wire: []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
			check: func(err error) bool {
				var e *mux.FrameTooLargeError
				return errors.As(err, &e) && e.Length == 0xffffffff
			},
		},
		{
			name:  "one past the limit",
			wire:  binary.BigEndian.AppendUint32([]byte{0, 0, 0, 2}, mux.MaxPayload+1),
			check: func(err error) bool { var e *mux.FrameTooLargeError; return errors.As(err, &e) },
		},
		{
			name:  "unknown conn",
			wire:  frame(7, []byte("hi")),
			check: func(err error) bool { var e *mux.UnknownConnError; return errors.As(err, &e) && e.Conn == 7 },
		},
		{
			name:  "reserved conn",
			wire:  frame(0, []byte("hi")),
			check: func(err error) bool { return err != nil && bytes.Contains([]byte(err.Error()), []byte("reserved")) },
		},
		{
			name:  "garbage text",
			wire:  []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
			check: func(err error) bool { return err != nil && err != io.EOF },
		},
		{
			name:  "truncated payload",
			wire:  frame(1, []byte("hello"))[:10],
			check: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, raw := socketPair(t)
			m, a1, a2 := newMux(t, a)
			raw.Write(tc.wire)
			if tc.name == "truncated payload" {
				raw.Close()
			}
			select {
			case <-m.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("trunk not closed after bad input")
			}
			if !tc.check(m.Err()) {
				t.Fatalf("Err() = %v", m.Err())
			}
			for _, c := range []net.Conn{a1, a2} {
				if _, err := c.Read(make([]byte, 1)); !errors.Is(err, m.Err()) && err != m.Err() {
					t.Fatalf("Read error = %v, want the trunk error %v", err, m.Err())
				}
			}
			if _, err := a1.Write([]byte("x")); err == nil {
				t.Fatal("Write on a broken trunk succeeded")
			}
		})
	}
}

func TestMux_PeerCloseIsEOF(t *testing.T) {
	a, raw := socketPair(t)
	m, a1, _ := newMux(t, a)
	raw.Write(frame(1, []byte("last words")))
	raw.Close()
	got, err := io.ReadAll(a1)
	if err != nil || string(got) != "last words" {
		t.Fatalf("ReadAll = %q, %v; want the buffered bytes then EOF", got, err)
	}
	<-m.Done()
	if m.Err() != io.EOF {
		t.Fatalf("Err() = %v, want io.EOF", m.Err())
	}
}

func TestMux_ReadLimit(t *testing.T) {
	a, raw := socketPair(t)
	m, _, _ := newMux(t, a, mux.WithReadLimit(mux.MaxPayload))
	go func() {
		chunk := frame(1, make([]byte, 1<<20))
		for range 6 {
			if _, err := raw.Write(chunk); err != nil {
				return
			}
		}
	}()
	<-m.Done()
	if !errors.Is(m.Err(), mux.ErrReadLimit) {
		t.Fatalf("Err() = %v, want ErrReadLimit", m.Err())
	}
}

func TestMux_LocalCloseDropsFrames(t *testing.T) {
	a, raw := socketPair(t)
	m, a1, a2 := newMux(t, a)
	a1.Close()
	raw.Write(frame(1, []byte("ignored")))
	raw.Write(frame(2, []byte("kept")))
	got := make([]byte, 4)
	if _, err := io.ReadFull(a2, got); err != nil || string(got) != "kept" {
		t.Fatalf("conn 2 read %q, %v", got, err)
	}
	if m.Err() != nil {
		t.Fatalf("trunk broke: %v", m.Err())
	}
	if _, err := a1.Read(got); !errors.Is(err, mux.ErrClosed) {
		t.Fatalf("Read on closed conn = %v", err)
	}
}

func TestMux_Listen(t *testing.T) {
	a, _ := socketPair(t)
	m, err := mux.New(a)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Listen(mux.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil || c == nil {
		t.Fatalf("first Accept = %v, %v", c, err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	m.Close()
	if err := <-done; !errors.Is(err, mux.ErrClosed) {
		t.Fatalf("second Accept after Close = %v", err)
	}
	if _, err := m.Open(mux.ReservedConnID); err == nil {
		t.Fatal("Open(0) succeeded")
	}
}

func TestNew_Options(t *testing.T) {
	a, _ := socketPair(t)
	if _, err := mux.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := mux.New(a, mux.WithReadLimit(10)); err == nil {
		t.Error("tiny read limit accepted")
	}
	if _, err := mux.New(a, mux.WithReadBuffer(1)); err == nil {
		t.Error("tiny read buffer accepted")
	}
}

func TestMux_WriteTimeoutBreaksTrunk(t *testing.T) {
	a, _ := socketPair(t) // the peer never reads
	m, a1, _ := newMux(t, a, mux.WithWriteTimeout(50*time.Millisecond))
	chunk := make([]byte, 1<<20)
	var err error
	for range 64 { // far more than a socket buffer holds
		if _, err = a1.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write = %v, want a deadline error", err)
	}
	<-m.Done()
	if !errors.Is(m.Err(), os.ErrDeadlineExceeded) {
		t.Fatalf("Err() = %v", m.Err())
	}
}
