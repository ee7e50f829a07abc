package net_test

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	nrinet "github.com/containerd/nri/pkg/net"
)

// pair returns both ends of a new socket pair as connections.
func pair(t *testing.T) (local, peer net.Conn) {
	t.Helper()
	sp, err := nrinet.NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	local, err = sp.LocalConn()
	if err != nil {
		t.Fatal(err)
	}
	peer, err = sp.PeerConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close(); peer.Close() })
	return local, peer
}

// roundTrip writes msg on a and reads it from b.
func roundTrip(t *testing.T, a, b net.Conn, msg string) {
	t.Helper()
	if _, err := a.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != msg {
		t.Fatalf("read %q, %v; want %q", buf, err, msg)
	}
}

func TestSocketPair(t *testing.T) {
	sp, err := nrinet.NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []interface{ Fd() uintptr }{sp.LocalFile(), sp.PeerFile()} {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFD, 0)
		if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
			t.Errorf("fd %d is not close-on-exec (flags %#x, %v)", f.Fd(), flags, errno)
		}
	}
	sp.Close()

	local, peer := pair(t)
	roundTrip(t, local, peer, "ping")
	roundTrip(t, peer, local, "pong")
}

func TestNewFdConn(t *testing.T) {
	sp, err := nrinet.NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.LocalClose()
	fd, err := syscall.Dup(int(sp.PeerFile().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	sp.PeerClose()
	conn, err := nrinet.NewFdConn(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Checked before anything else opens a file, which could reuse fd.
	if _, err := syscall.Getpeername(fd); !errors.Is(err, syscall.EBADF) {
		t.Errorf("fd %d still open after NewFdConn: %v", fd, err)
	}
	local, err := sp.LocalConn()
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	roundTrip(t, local, conn, "hello")
	if _, err := nrinet.NewFdConn(-1); err == nil {
		t.Errorf("NewFdConn(-1) succeeded")
	}
}

func TestConnListener(t *testing.T) {
	local, peer := pair(t)
	l := nrinet.NewConnListener(local)
	if l.Addr() != local.LocalAddr() {
		t.Errorf("Addr() = %v, want %v", l.Addr(), local.LocalAddr())
	}
	conn, err := l.Accept()
	if err != nil || conn != local {
		t.Fatalf("first Accept = %v, %v; want the connection", conn, err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-accepted; err != io.EOF {
		t.Fatalf("Accept after Close = %v, want io.EOF", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the connection is still open after Close: read %v", err)
	}
}
