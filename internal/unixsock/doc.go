// Package unixsock listens on unix sockets for nrinet's servers: the
// runtime's NRI socket and nrinetd's CRI socket. Whatever the process's
// umask, the socket is never reachable with a wider mode than 0600 (owner
// only): it is bound in a private directory (0700) beside its path, given
// its mode, and only then moved into place. A stale socket (one nobody
// listens on) is replaced; anything else at the path is refused and left
// as it is, and so is a socket another process still listens on.
package unixsock
