package sdnotify_test

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/sdnotify"
)

func send(t *testing.T, path, msg string) {
	t.Helper()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func TestListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	l, err := sdnotify.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send(t, path, "STATUS=starting")
	send(t, path, "STATUS=serving\nREADY=1")
	select {
	case <-l.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("READY=1 was not seen")
	}
	send(t, path, "READY=1") // again: no panic
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
