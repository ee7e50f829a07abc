package podnet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// noRouterAdvertisements sets the IPv6 sysctl accept_ra of the named
// interface to 0 in the network namespace of the calling thread: a router
// advertisement it receives then changes no route and makes no address.
// A kernel without IPv6 (no /proc/sys/net/ipv6) has nothing to turn off.
// Equivalent to: sysctl -w net.ipv6.conf.$name.accept_ra=0
func noRouterAdvertisements(name string) error {
	p := filepath.Join("/proc/sys/net/ipv6/conf", name, "accept_ra")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat("/proc/sys/net/ipv6"); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
	}
	if err == nil && strings.TrimSpace(string(b)) == "0" {
		return nil
	}
	if err == nil {
		err = os.WriteFile(p, []byte("0\n"), 0o644)
	}
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return &sysctlError{path: p, err: err}
	}
	if err != nil {
		return fmt.Errorf("turning off router advertisements on %s (%s = 0): %w", name, p, err)
	}
	return nil
}

// sysctlWritable reports whether the sysctl file at p can be written
// here: not in a container whose /proc/sys is read-only. A file that is
// not there (yet) does not say it cannot.
func sysctlWritable(p string) bool {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return false
	}
	if err == nil {
		f.Close()
	}
	return true
}

// sysctlError is a sysctl that cannot be written here: /proc/sys is
// read-only in a container that is not privileged (the DaemonSet's). The
// setting it stands for is defence in depth (port security drops router
// advertisements from pods), so it is logged once, not fatal.
type sysctlError struct {
	path string
	err  error
}

func (e *sysctlError) Error() string {
	return fmt.Sprintf("cannot write %s (/proc/sys is read-only in a container that is not privileged): %v", e.path, e.err)
}

func (e *sysctlError) Unwrap() error { return e.err }

// noRouteLocalnet sets the IPv4 sysctl route_localnet of the named
// interface to 0 in the network namespace of the calling thread and
// reports whether it was on: nri-podnet with noLocalhostHostPorts, on a
// bridge that a run without it had given route_localnet (package hostport
// turns it on only with its guard, which that run's table held).
// Equivalent to: sysctl -w net.ipv4.conf.$name.route_localnet=0
func noRouteLocalnet(name string) (was bool, err error) {
	p := filepath.Join("/proc/sys/net/ipv4/conf", name, "route_localnet")
	b, err := os.ReadFile(p)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", p, err)
	}
	if strings.TrimSpace(string(b)) == "0" {
		return false, nil
	}
	if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
		return true, fmt.Errorf("turning route_localnet off (%s = 0): %w", p, err)
	}
	return true, nil
}

// inNetNS runs f on a thread of its own in the network namespace ns (so
// that /proc/sys/net is ns's): nsconn.Do.
func inNetNS(ns netns.NsHandle, f func() error) error { return nsconn.Do(int(ns), f) }
