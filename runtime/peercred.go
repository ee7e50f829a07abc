package runtime

import "net"

// cred is who is at the other end of a unix socket.
type cred struct {
	pid int
	uid uint32
}

// peerPid returns the process id of the peer of a unix socket connection,
// for log messages only; 0 if it cannot be read.
func peerPid(conn net.Conn) int {
	c, err := peerCred(conn)
	if err != nil {
		return 0
	}
	return c.pid
}
