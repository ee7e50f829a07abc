package hostport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// WithLocalhost makes host ports reachable from the node's own IPv4
// loopback addresses, as CRI and the CNI portmap plugin give them
// (`curl http://127.0.0.1:HOSTPORT` on the node): iface is the interface
// the pods are behind (nri-podnet's bridge). While the table holds a host
// port the Mapper keeps, besides the pods' rules:
//
//   - the guard against CVE-2020-8558 ([ChainGuard]), written before
//     route_localnet is turned on: what reaches 127.0.0.0/8 (or ::1) from
//     any interface but lo is dropped and counted;
//   - net.ipv4.conf.IFACE.route_localnet = 1, so that the kernel routes
//     a connection from 127.0.0.1, once DNATed to a pod, out of iface, and
//     its replies back;
//   - the masquerade of such connections to iface's address (the pods'
//     gateway), so that the pod answers to an address it can reach.
//
// When the last host port goes, route_localnet goes back to 0 before the
// guard goes with the table; [Mapper.Uninstall] does the same. Without
// the option none of it is done: a connection from 127.0.0.1 is not
// supported (see the package documentation). IPv6 has no route_localnet:
// a connection from ::1 is never supported.
func WithLocalhost(iface string) Option {
	return func(m *Mapper) error {
		if iface == "" || len(iface) >= unix.IFNAMSIZ || strings.ContainsAny(iface, "/ \t\n") {
			return fmt.Errorf("hostport: WithLocalhost: %q is not an interface name", iface)
		}
		if m.localhost != "" {
			return errors.New("hostport: WithLocalhost given twice")
		}
		m.localhost = iface
		return nil
	}
}

// localnet sets route_localnet of the Mapper's [WithLocalhost] interface
// in its network namespace; a Mapper without one has nothing to set.
// Turning it off on an interface that is gone is not an error.
func (m *Mapper) localnet(on bool) error {
	if m.localhost == "" {
		return nil
	}
	err := m.inNetNS(func() error { return setRouteLocalnet(m.localhost, on) })
	if !on && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostport: %w", err)
	}
	return nil
}

// routeLocalnetPath is the sysctl net.ipv4.conf.IFACE.route_localnet.
func routeLocalnetPath(iface string) string {
	return filepath.Join("/proc/sys/net/ipv4/conf", iface, "route_localnet")
}

// setRouteLocalnet sets net.ipv4.conf.IFACE.route_localnet in the network
// namespace of the calling thread. Equivalent to:
//
//	sysctl -w net.ipv4.conf.$iface.route_localnet=1 (or 0)
func setRouteLocalnet(iface string, on bool) error {
	v := "0\n"
	if on {
		v = "1\n"
	}
	if err := os.WriteFile(routeLocalnetPath(iface), []byte(v), 0o644); err != nil {
		return fmt.Errorf("setting route_localnet of %s to %s: %w", iface, strings.TrimSpace(v), err)
	}
	return nil
}

// inNetNS runs f in the Mapper's network namespace (nsconn.Do).
func (m *Mapper) inNetNS(f func() error) error { return nsconn.Do(m.ns.FD(), f) }
