package podnet

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// ensureBridge creates the bridge if it is missing, sets its MTU, gives it
// the gateway addresses, with netfilter turns on the bridge's
// nf_call_iptables and nf_call_ip6tables (see bridgeNetfilter), and
// brings it up. An existing bridge is reused.
func ensureBridge(name string, gateways []netip.Prefix, mtu int, netfilter bool, log *slog.Logger) (netlink.Link, error) {
	br, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MTU, attrs.HardwareAddr = name, mtu, bridgeMAC(name)
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating bridge %q: %w", name, err)
		}
		if br, err = netlink.LinkByName(name); err != nil {
			return nil, fmt.Errorf("bridge %q: %w", name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("bridge %q: %w", name, err)
	case br.Type() != "bridge":
		return nil, fmt.Errorf("interface %q exists and is a %s, not a bridge", name, br.Type())
	}
	if mac := bridgeMAC(name); !bytes.Equal(br.Attrs().HardwareAddr, mac) {
		// A bridge made before nri-podnet fixed the MAC: fix it now.
		if err := netlink.LinkSetHardwareAddr(br, mac); err != nil {
			return nil, fmt.Errorf("bridge %q: setting its MAC to %s: %w", name, mac, err)
		}
		log.Info("fixed the bridge's MAC address", "bridge", name, "was", br.Attrs().HardwareAddr.String(), "now", mac.String())
	}
	if err := bridgeLinkLocal(br, gateways); err != nil {
		return nil, fmt.Errorf("bridge %q: %w", name, err)
	}
	// The node takes no route or address from what a pod advertises
	// (port security drops router advertisements from pods too).
	var se *sysctlError
	if err := noRouterAdvertisements(name); errors.As(err, &se) {
		log.Warn("cannot turn router advertisements off on the bridge, the host veths and the pods' eth0 (accept_ra); port security still drops router advertisements from pods", "error", err)
	} else if err != nil {
		return nil, fmt.Errorf("bridge %q: %w", name, err)
	}
	if netfilter {
		if err := bridgeNetfilter(br, log); err != nil {
			return nil, fmt.Errorf("bridge %q: %w", name, err)
		}
	}
	for _, gw := range gateways {
		addr := &netlink.Addr{IPNet: prefixNet(gw)}
		if gw.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := netlink.AddrReplace(br, addr); err != nil {
			return nil, fmt.Errorf("bridge %q: adding gateway %s: %w", name, gw, err)
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("bridge %q: %w", name, err)
	}
	return br, nil
}

// bridgeLinkLocal is the bridge's IPv6 link-local address. The kernel
// solicits neighbours for packets it forwards (traffic from other nodes to
// the pods) only from a usable link-local address of the interface; the
// one it makes itself when the bridge gets its first port spends a second
// in duplicate address detection, during which such packets are dropped.
// Ours has no DAD (IFA_F_NODAD): on a bridge only nri-podnet's pods, whose
// link-local addresses come from their MACs, share the link.
var bridgeLinkLocal6 = netip.MustParsePrefix("fe80::1/64")

// in6AddrGenModeNone is IN6_ADDR_GEN_MODE_NONE of linux/if_link.h: the
// kernel makes no link-local address for the interface.
const in6AddrGenModeNone = 1

// bridgeLinkLocal gives the bridge, if it has an IPv6 gateway, the
// link-local address bridgeLinkLocal6 and turns off the kernel's own
// (address generation mode none).
func bridgeLinkLocal(br netlink.Link, gateways []netip.Prefix) error {
	if !slices.ContainsFunc(gateways, func(gw netip.Prefix) bool { return gw.Addr().Is6() }) {
		return nil
	}
	if err := netlink.LinkSetIP6AddrGenMode(br, in6AddrGenModeNone); err != nil {
		return fmt.Errorf("turning off IPv6 link-local address generation: %w", err)
	}
	addr := &netlink.Addr{IPNet: prefixNet(bridgeLinkLocal6), Flags: unix.IFA_F_NODAD}
	if err := netlink.AddrReplace(br, addr); err != nil {
		return fmt.Errorf("adding link-local %s: %w", bridgeLinkLocal6, err)
	}
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// podLink describes what setupPod configures.
type podLink struct {
	netnsPath string
	hostName  string
	mac       net.HardwareAddr
	mtu       int
	bridge    netlink.Link
	addrs     []netip.Prefix
	gateways  []netip.Prefix
}

// podNS is a pod's network namespace, open for setting it up: createPair
// makes the veth pair with its pod end directly in the namespace as eth0,
// configure sets up the pod side. Both are idempotent: a pair from before
// is reused and its configuration completed.
type podNS struct {
	path string
	ns   netns.NsHandle
	h    *netlink.Handle // route netlink, in the namespace
}

// openPodNS opens the network namespace at path; Close releases it.
func openPodNS(path string) (*podNS, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink handle in %s: %w", path, err)
	}
	return &podNS{path: path, ns: ns, h: h}, nil
}

// Close releases the namespace and the netlink handle.
func (p *podNS) Close() {
	p.h.Close()
	p.ns.Close()
}

// createPair creates the veth pair: the host end l.hostName on the
// bridge, up; the pod end eth0 in the namespace. Only if a name is taken
// does it look closer: our host veth from before (RunPodSandbox repeated)
// is reused if its pod end is in this namespace, else made again; an eth0
// that is not ours fails. It needs neither l.addrs nor l.gateways.
func (p *podNS) createPair(l podLink) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = l.hostName, l.mtu
	attrs.MasterIndex = l.bridge.Attrs().Index
	attrs.Flags = net.FlagUp
	// The bridge's port security group from the start: a port of the
	// group that the guard does not know yet passes nothing.
	attrs.Group = portsec.Group(l.bridge.Attrs().Name)
	veth := &netlink.Veth{
		LinkAttrs:        attrs,
		PeerName:         podIfName,
		PeerHardwareAddr: l.mac,
		PeerNamespace:    netlink.NsFd(int(p.ns)),
		PeerMTU:          uint32(l.mtu),
	}
	err := netlink.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) {
		if host, herr := netlink.LinkByName(l.hostName); herr == nil {
			if _, perr := p.h.LinkByName(podIfName); perr == nil {
				err = nil
				veth.Index = host.Attrs().Index
				if host.Attrs().Group != attrs.Group {
					err = netlink.LinkSetGroup(host, int(attrs.Group))
				}
			} else if err = deleteHostVeth(l.hostName); err == nil {
				err = netlink.LinkAdd(veth)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("creating veth %s/%s in %s: %w", l.hostName, podIfName, p.path, err)
	}
	// A read-only /proc/sys was logged at the bridge's setup.
	var se *sysctlError
	if err := noRouterAdvertisements(l.hostName); err != nil && !errors.As(err, &se) {
		return err
	}
	// Hairpin mode: the bridge may send a frame back out of the port it
	// came in on, so that a pod reaches itself through a Service whose
	// DNAT the bridge's netfilter hooks apply to bridged traffic.
	if err := netlink.LinkSetHairpin(veth, true); err != nil {
		return fmt.Errorf("hairpin mode on %s: %w", l.hostName, err)
	}
	return nil
}

// configure puts l.addrs on eth0, sets eth0 and lo up and adds the
// default routes via l.gateways.
func (p *podNS) configure(l podLink) error {
	h := p.h
	eth0, err := h.LinkByName(podIfName)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", podIfName, p.path, err)
	}
	// Before eth0 is up: the pod takes no route or address from router
	// advertisements, and a pod without an IPv6 address has no IPv6 on
	// eth0 at all (no link-local address, which would reach the other
	// pods past their IPv4 policies).
	if eth0.Attrs().Flags&net.FlagUp == 0 && !slices.ContainsFunc(l.addrs, func(a netip.Prefix) bool { return a.Addr().Is6() }) {
		if err := h.LinkSetIP6AddrGenMode(eth0, in6AddrGenModeNone); err != nil && !errors.Is(err, unix.EAFNOSUPPORT) {
			return fmt.Errorf("%s in %s: turning off IPv6 link-local address generation: %w", podIfName, p.path, err)
		}
	}
	var se *sysctlError // a read-only /proc/sys: logged at the bridge's setup
	if err := inNetNS(p.ns, func() error { return noRouterAdvertisements(podIfName) }); err != nil && !errors.As(err, &se) {
		return fmt.Errorf("%s in %s: %w", podIfName, p.path, err)
	}
	for _, a := range l.addrs {
		addr := &netlink.Addr{IPNet: prefixNet(a)}
		if a.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD // usable at once
		}
		if err := h.AddrReplace(eth0, addr); err != nil {
			return fmt.Errorf("adding %s to %s in %s: %w", a, podIfName, p.path, err)
		}
	}
	if err := h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("%s in %s: %w", podIfName, p.path, err)
	}
	// lo is interface 1 in every network namespace.
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: loIndex, Name: "lo"}}
	if err := h.LinkSetUp(lo); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("lo in %s: %w", p.path, err)
	}
	for _, gw := range l.gateways {
		r := &netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw.Addr().AsSlice(), Family: family(gw.Addr())}
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("default route via %s in %s: %w", gw.Addr(), p.path, err)
		}
	}
	return nil
}

// loIndex is the loopback interface's index in every network namespace.
const loIndex = 1

func family(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// bridgePorts lists the names of the interfaces attached to the named
// bridge. Equivalent to: ip link show master $bridge
func bridgePorts(bridge string) ([]string, error) {
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil, fmt.Errorf("bridge %q: %w", bridge, err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var ports []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			ports = append(ports, l.Attrs().Name)
		}
	}
	return ports, nil
}

// deleteHostVeth deletes the host end of a pod's veth pair, which takes
// the pod end with it. A missing one is fine.
func deleteHostVeth(name string) error {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := netlink.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// checkPod reports whether eth0 exists and is up in the pod's namespace.
func checkPod(netnsPath string) error {
	if _, err := os.Stat(netnsPath); err != nil {
		return fmt.Errorf("network namespace %s: %w", netnsPath, err)
	}
	ns, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(podIfName)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", podIfName, netnsPath, err)
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		return fmt.Errorf("%s in %s is down", podIfName, netnsPath)
	}
	return nil
}

// flushPodAddrs removes addresses from the pod's eth0, so that an address
// given back to the allocator is no longer in use. A missing namespace or
// interface is fine.
func flushPodAddrs(netnsPath string, addrs []netip.Prefix) error {
	if netnsPath == "" {
		return nil
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return nil
	}
	ns, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return nil
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	eth0, err := h.LinkByName(podIfName)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := h.AddrDel(eth0, &netlink.Addr{IPNet: prefixNet(a)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("removing %s from %s in %s: %w", a, podIfName, netnsPath, err)
		}
	}
	return nil
}
