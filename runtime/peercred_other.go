//go:build !linux

package runtime

import (
	"errors"
	"net"
)

// peerCred is not supported on this platform.
func peerCred(net.Conn) (cred, error) {
	return cred{}, errors.New("peer credentials are not supported on this platform")
}
