package multiplex_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/containerd/nri/pkg/net/multiplex"
)

// trunks returns the two ends of a unix socket connection, closed when
// the test ends.
func trunks(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds := make([]net.Conn, 2)
	l, err := net.Listen("unix", t.TempDir()+"/trunk.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		if fds[1], err = l.Accept(); err != nil {
			t.Error(err)
		}
	})
	if fds[0], err = net.Dial("unix", l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Cleanup(func() { fds[0].Close(); fds[1].Close() })
	return fds[0], fds[1]
}

func exchange(t *testing.T, a, b net.Conn, msg string) {
	t.Helper()
	if _, err := a.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != msg {
		t.Fatalf("read %q, %v; want %q", buf, err, msg)
	}
}

func TestMultiplex(t *testing.T) {
	ta, tb := trunks(t)
	// Both ends open their connections before reading starts.
	ma := multiplex.Multiplex(ta, multiplex.WithBlockedRead(), multiplex.WithReadQueueLength(8))
	mb := multiplex.Multiplex(tb, multiplex.WithBlockedRead())
	t.Cleanup(func() { ma.Close(); mb.Close() })
	if ma.Trunk() != ta {
		t.Errorf("Trunk() is not the trunk")
	}

	a1, err := ma.Open(multiplex.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := ma.Dialer(multiplex.RuntimeServiceConn)("unix", "ignored")
	if err != nil {
		t.Fatal(err)
	}
	l, err := mb.Listen(multiplex.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b2, err := mb.Open(multiplex.RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	ma.Unblock()
	mb.Unblock()

	exchange(t, a1, b1, "to the plugin")
	exchange(t, b2, a2, "to the runtime")
	exchange(t, b1, a1, "reply")

	if err := ma.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := b1.Read(make([]byte, 1)); err == nil {
		t.Errorf("read after the peer closed the trunk succeeded")
	}
}

func TestConnIDs(t *testing.T) {
	if multiplex.LowestConnID != 1 || multiplex.PluginServiceConn != 1 || multiplex.RuntimeServiceConn != 2 {
		t.Errorf("ids: lowest %d, plugin %d, runtime %d", multiplex.LowestConnID, multiplex.PluginServiceConn, multiplex.RuntimeServiceConn)
	}
	ta, _ := trunks(t)
	m := multiplex.Multiplex(ta)
	defer m.Close()
	if _, err := m.Open(0); err == nil {
		t.Errorf("Open(0) succeeded; 0 is reserved")
	}
}
