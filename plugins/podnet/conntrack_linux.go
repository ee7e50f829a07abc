package podnet

import (
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// deleteConntrack deletes the connections the node's conntrack table
// holds to or from any of addrs, in either direction (a connection to a
// Service whose reply comes from the pod too).
func deleteConntrack(addrs []netip.Prefix) error {
	var errs []error
	for _, a := range addrs {
		ip := net.IP(a.Addr().AsSlice())
		family := netlink.InetFamily(unix.AF_INET)
		if a.Addr().Is6() {
			family = unix.AF_INET6
		}
		var filters []netlink.CustomConntrackFilter
		for _, tp := range []netlink.ConntrackFilterType{netlink.ConntrackOrigSrcIP, netlink.ConntrackOrigDstIP, netlink.ConntrackReplySrcIP, netlink.ConntrackReplyDstIP} {
			f := &netlink.ConntrackFilter{}
			if err := f.AddIP(tp, ip); err != nil {
				errs = append(errs, err)
				continue
			}
			filters = append(filters, f)
		}
		if _, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, filters...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
