package net

import (
	"fmt"
	"net"
	"os"
)

// SocketPair is a connected pair of unix stream sockets, both ends
// close-on-exec: a runtime keeps the local end and passes the peer end to
// a plugin it launches.
type SocketPair struct {
	local, peer *os.File
}

// NewSocketPair returns a connected pair of sockets.
func NewSocketPair() (SocketPair, error) {
	fds, err := socketpair()
	if err != nil {
		return SocketPair{}, fmt.Errorf("net: socketpair: %w", err)
	}
	name := fmt.Sprintf("socketpair-#%d:%d", fds[0], fds[1])
	return SocketPair{
		local: os.NewFile(uintptr(fds[0]), name+"[0]"),
		peer:  os.NewFile(uintptr(fds[1]), name+"[1]"),
	}, nil
}

// LocalFile returns the local end.
func (sp SocketPair) LocalFile() *os.File { return sp.local }

// PeerFile returns the peer end.
func (sp SocketPair) PeerFile() *os.File { return sp.peer }

// LocalConn returns a net.Conn for the local end, and closes LocalFile.
func (sp SocketPair) LocalConn() (net.Conn, error) { return fileConn(sp.local) }

// PeerConn returns a net.Conn for the peer end, and closes PeerFile.
func (sp SocketPair) PeerConn() (net.Conn, error) { return fileConn(sp.peer) }

// Close closes both ends' files.
func (sp SocketPair) Close() {
	sp.LocalClose()
	sp.PeerClose()
}

// LocalClose closes the local end's file.
func (sp SocketPair) LocalClose() { sp.local.Close() }

// PeerClose closes the peer end's file.
func (sp SocketPair) PeerClose() { sp.peer.Close() }

// fileConn returns a net.Conn for f and closes f.
func fileConn(f *os.File) (net.Conn, error) {
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("net: a connection of %s: %w", f.Name(), err)
	}
	return conn, nil
}
