//go:build !linux

package runtime

import "net"

// peerPid is not supported on this platform.
func peerPid(net.Conn) int { return 0 }
