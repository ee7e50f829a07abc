package mux_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nrinet/nrinet/mux"
)

// The read deadline and the write watchdog run on synctest's clock: time
// is what these tests are about, and in a bubble it moves only when every
// goroutine waits, so each test can say when something happens, not only
// whether. The trunk is a net.Pipe, whose waits the bubble sees (a
// socket's are system calls, which it does not).

// TestMux_ReadDeadline: a Read with nothing to read fails with
// os.ErrDeadlineExceeded at its deadline.
func TestMux_ReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := net.Pipe()
		_, a1, _ := newMux(t, a)
		start := time.Now()
		a1.SetReadDeadline(start.Add(20 * time.Millisecond))
		if _, err := a1.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read = %v, want os.ErrDeadlineExceeded", err)
		}
		if took := time.Since(start); took != 20*time.Millisecond {
			t.Errorf("Read failed after %v, want at its deadline, 20ms", took)
		}
	})
}

// TestMux_WriteWatchdog: a frame the peer does not take within the write
// timeout breaks the trunk at the watchdog's first check past it, within
// 1.25 times the timeout (WithWriteTimeout's promise); one the peer takes
// in time does not.
func TestMux_WriteWatchdog(t *testing.T) {
	const timeout = 40 * time.Millisecond // checked every 10 ms
	for _, tc := range []struct {
		name      string
		readAfter time.Duration // when the peer reads the frame; 0: never
	}{
		{name: "the peer never reads"},
		{name: "the peer reads in time", readAfter: timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, peer := net.Pipe() // holds nothing: a write waits for the peer's read
				m, a1, _ := newMux(t, a, mux.WithWriteTimeout(timeout))
				if tc.readAfter > 0 {
					go func() {
						time.Sleep(tc.readAfter)
						io.ReadFull(peer, make([]byte, mux.HeaderSize+1))
					}()
				}
				start := time.Now()
				_, err := a1.Write([]byte{1})
				took := time.Since(start)
				if tc.readAfter > 0 {
					if err != nil {
						t.Fatalf("Write = %v, want it written when the peer read it after %v", err, tc.readAfter)
					}
					time.Sleep(10 * timeout) // the watchdog's checks go on meanwhile
					if err := m.Err(); err != nil {
						t.Fatalf("the trunk broke after a write that finished in time: %v", err)
					}
					return
				}
				if err == nil {
					t.Fatal("Write to a peer that never reads succeeded")
				}
				if !errors.Is(m.Err(), os.ErrDeadlineExceeded) {
					t.Fatalf("Err() = %v, want os.ErrDeadlineExceeded", m.Err())
				}
				if took <= timeout || took > timeout*5/4 {
					t.Errorf("the trunk broke %v into the write, want after the %v timeout and within 1.25 times it", took, timeout)
				}
			})
		})
	}
}
