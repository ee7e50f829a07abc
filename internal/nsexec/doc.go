// Package nsexec runs a function on a thread in another network
// namespace, given as an open file descriptor: what nri-podnet's kernel
// agents (through plugins/podnet/internal/nsconn) and the tests
// (testutil.InNetNS) do to open sockets or read /proc/sys/net there.
package nsexec
