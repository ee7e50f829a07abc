package main

import (
	"net"
	"path/filepath"
	"testing"
)

func TestNotifier(t *testing.T) {
	if err := (notifier{}).notify("READY=1"); err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v", err)
	}
	for _, tc := range []struct{ name, addr string }{
		{"path", filepath.Join(t.TempDir(), "notify.sock")},
		{"abstract", "@nrinetd-notify-test-" + filepath.Base(t.TempDir())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: tc.addr, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := (notifier{addr: tc.addr}).notify("READY=1"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "READY=1" {
				t.Errorf("received %q, %v; want READY=1", buf[:n], err)
			}
		})
	}
	if err := (notifier{addr: filepath.Join(t.TempDir(), "none.sock")}).notify("READY=1"); err == nil {
		t.Error("notifying a socket nobody listens on succeeded")
	}
}
