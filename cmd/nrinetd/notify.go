package main

import (
	"fmt"
	"net"
)

// notifier tells a service manager about nrinetd's state with the
// sd_notify protocol: one datagram such as "READY=1" to the unix socket
// named by NOTIFY_SOCKET ("@name" is in the abstract namespace). With no
// socket it does nothing.
type notifier struct {
	addr string // NOTIFY_SOCKET; "" for none
}

// notify sends state, e.g. "READY=1" or "STOPPING=1".
func (n notifier) notify(state string) error {
	if n.addr == "" {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notifying %q to NOTIFY_SOCKET %s: %w", state, n.addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("notifying %q to NOTIFY_SOCKET %s: %w", state, n.addr, err)
	}
	return nil
}
