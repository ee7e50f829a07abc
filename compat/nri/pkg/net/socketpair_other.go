//go:build unix && !linux

package net

import "syscall"

// socketpair returns a connected pair of close-on-exec unix stream
// sockets. Without SOCK_CLOEXEC, the fork lock keeps a concurrent exec
// from inheriting them before they are marked.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}
