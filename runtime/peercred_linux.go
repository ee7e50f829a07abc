package runtime

import (
	"errors"
	"net"
	"syscall"
)

// peerCred returns the process id and user id of the peer of a unix
// socket connection (SO_PEERCRED).
func peerCred(conn net.Conn) (cred, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return cred{}, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return cred{}, err
	}
	var (
		c    cred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		uc, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if err != nil {
			cerr = err
			return
		}
		c = cred{pid: int(uc.Pid), uid: uc.Uid}
	}); err != nil {
		return cred{}, err
	}
	return c, cerr
}
