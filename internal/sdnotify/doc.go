// Package sdnotify is the receiving end of the service readiness protocol
// systemd speaks with Type=notify services (sd_notify): a unix datagram
// socket, named to the service in NOTIFY_SOCKET, on which it sends
// newline-separated assignments such as READY=1. The demo and the tests
// that start nrinetd wait on it instead of polling nrinetd's CRI socket.
package sdnotify
