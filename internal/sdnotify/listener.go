package sdnotify

import (
	"net"
	"os"
	"slices"
	"strings"
	"sync"
)

// Listener receives a service's notifications on a unix datagram socket.
type Listener struct {
	conn  *net.UnixConn
	ready chan struct{}
	once  sync.Once
	done  chan struct{} // closed when the reader has ended
}

// Listen listens at path, replacing a socket file a previous listener
// left there. Give the service NOTIFY_SOCKET=path.
func Listen(path string) (*Listener, error) {
	os.Remove(path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	l := &Listener{conn: conn, ready: make(chan struct{}), done: make(chan struct{})}
	go l.read()
	return l, nil
}

// read watches the datagrams for READY=1 until the socket is closed.
func (l *Listener) read() {
	defer close(l.done)
	buf := make([]byte, 4096)
	for {
		n, err := l.conn.Read(buf)
		if err != nil {
			return // closed
		}
		if slices.Contains(strings.Split(string(buf[:n]), "\n"), "READY=1") {
			l.once.Do(func() { close(l.ready) })
		}
	}
}

// Ready is closed once the service said READY=1.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Close closes the socket and waits for its reader to end.
func (l *Listener) Close() error {
	err := l.conn.Close()
	<-l.done
	return err
}
