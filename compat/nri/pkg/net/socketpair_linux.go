package net

import "syscall"

// socketpair returns a connected pair of close-on-exec unix stream
// sockets.
func socketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
