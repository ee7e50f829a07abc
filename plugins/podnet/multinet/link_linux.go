package multinet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// podNS is a pod's network namespace, open.
type podNS struct {
	path string
	ns   netns.NsHandle
	h    *netlink.Handle
}

func openNS(path string) (*podNS, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", path, err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink in %s: %w", path, err)
	}
	return &podNS{path: path, ns: ns, h: h}, nil
}

func (p *podNS) Close() {
	p.h.Close()
	p.ns.Close()
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// deleteLink deletes the pod's interface name if it has mac. Equivalent
// to: ip -n POD link del $name
func (p *podNS) deleteLink(name string, mac net.HardwareAddr) error {
	l, err := p.h.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s in %s: %w", name, p.path, err)
	}
	if !bytes.Equal(l.Attrs().HardwareAddr, mac) {
		return nil // not ours any more
	}
	if err := p.h.LinkDel(l); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting %s in %s: %w", name, p.path, err)
	}
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// ensureBridge creates a bridge network's bridge in the host namespace if
// missing (an interface of that name that is no bridge is an error),
// fixes its MAC, gives it the gateways and brings it up.
func (m *Manager) ensureBridge(n *network) error {
	br, err := m.hh.LinkByName(n.Bridge)
	switch {
	case isNotFound(err):
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.HardwareAddr = n.Bridge, bridgeMAC(n.Bridge)
		attrs.MTU = n.MTU
		if attrs.MTU == 0 {
			attrs.MTU = defaultMTU
		}
		if err := m.hh.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating bridge %q: %w", n.Bridge, err)
		}
		if br, err = m.hh.LinkByName(n.Bridge); err != nil {
			return fmt.Errorf("bridge %q: %w", n.Bridge, err)
		}
	case err != nil:
		return fmt.Errorf("bridge %q: %w", n.Bridge, err)
	case br.Type() != "bridge":
		return fmt.Errorf("interface %q exists and is a %s, not a bridge", n.Bridge, br.Type())
	}
	for _, gw := range n.gateways {
		addr := &netlink.Addr{IPNet: prefixNet(gw)}
		if gw.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := m.hh.AddrReplace(br, addr); err != nil {
			return fmt.Errorf("bridge %q: adding gateway %s: %w", n.Bridge, gw, err)
		}
	}
	if err := m.hh.LinkSetUp(br); err != nil {
		return fmt.Errorf("bridge %q: %w", n.Bridge, err)
	}
	return nil
}

// create makes one planned interface in the pod and configures it.
func (m *Manager) create(pod *podNS, n *network, itf Interface) error {
	mac := itf.HardwareAddr()
	switch n.Kind {
	case KindBridge:
		br, err := m.hh.LinkByName(n.Bridge)
		if err != nil {
			return fmt.Errorf("multinet: network %q: bridge %q: %w", n.Name, n.Bridge, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MTU, attrs.MasterIndex, attrs.Flags = itf.HostName, itf.MTU, br.Attrs().Index, net.FlagUp
		// The bridge's port security group from the start: a port of the
		// group that the guard does not know passes nothing.
		attrs.Group = portsec.Group(n.Bridge)
		veth := &netlink.Veth{
			LinkAttrs: attrs, PeerName: itf.Name, PeerHardwareAddr: mac,
			PeerNamespace: netlink.NsFd(int(pod.ns)), PeerMTU: uint32(itf.MTU),
		}
		if err := m.hh.LinkAdd(veth); err != nil {
			return fmt.Errorf("multinet: network %q: creating veth %s/%s in %s: %w", n.Name, itf.HostName, itf.Name, pod.path, err)
		}
	case KindMacvlan:
		master, err := m.hh.LinkByName(n.Master)
		if err != nil {
			return fmt.Errorf("multinet: network %q: master %q: %w", n.Name, n.Master, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.ParentIndex, attrs.HardwareAddr = itf.Name, master.Attrs().Index, mac
		attrs.MTU, attrs.Namespace = itf.MTU, netlink.NsFd(int(pod.ns))
		if err := m.hh.LinkAdd(&netlink.Macvlan{LinkAttrs: attrs, Mode: netlink.MACVLAN_MODE_BRIDGE}); err != nil {
			return fmt.Errorf("multinet: network %q: creating macvlan %s on %s in %s: %w", n.Name, itf.Name, n.Master, pod.path, err)
		}
	case KindHost:
		if err := m.moveIn(pod, n, itf); err != nil {
			return err
		}
	}
	return pod.configure(n, itf)
}

// moveIn moves a host network's interface into the pod, down, and
// renames it there. Equivalent to: ip link set $if netns POD; ip -n POD
// link set $if name netN
func (m *Manager) moveIn(pod *podNS, n *network, itf Interface) error {
	link, err := m.hh.LinkByName(itf.HostName)
	if err != nil {
		return fmt.Errorf("multinet: network %q: host interface %q: %w", n.Name, itf.HostName, err)
	}
	if err := m.hh.LinkSetDown(link); err != nil {
		return fmt.Errorf("multinet: network %q: %s down: %w", n.Name, itf.HostName, err)
	}
	if err := m.hh.LinkSetNsFd(link, int(pod.ns)); err != nil {
		return fmt.Errorf("multinet: network %q: moving %s into %s: %w", n.Name, itf.HostName, pod.path, err)
	}
	if itf.HostName == itf.Name {
		return nil
	}
	in, err := pod.h.LinkByName(itf.HostName)
	if err == nil {
		err = pod.h.LinkSetName(in, itf.Name)
	}
	if err != nil {
		return fmt.Errorf("multinet: network %q: renaming %s to %s in %s: %w", n.Name, itf.HostName, itf.Name, pod.path, err)
	}
	return nil
}

// giveBack moves a host network's interface from the pod (or, its
// namespace gone, from wherever the kernel put it on the host) back to
// the host under its own name, down. Found by MAC, whatever its name.
func (m *Manager) giveBack(pod *podNS, itf Interface) error {
	mac := itf.HardwareAddr()
	if pod != nil {
		if l, ok := byMAC(pod.h, mac); ok {
			if err := pod.h.LinkSetDown(l); err != nil {
				return fmt.Errorf("%s down in %s: %w", l.Attrs().Name, pod.path, err)
			}
			// The original name in the pod first, so that no name of the
			// host's is needed in between.
			if l.Attrs().Name != itf.HostName {
				if err := pod.h.LinkSetName(l, itf.HostName); err != nil {
					return fmt.Errorf("renaming %s to %s in %s: %w", l.Attrs().Name, itf.HostName, pod.path, err)
				}
			}
			if err := pod.h.LinkSetNsFd(l, int(m.host)); err != nil {
				return fmt.Errorf("moving %s from %s to the host: %w", itf.HostName, pod.path, err)
			}
			return nil
		}
	}
	l, ok := byMAC(m.hh, mac)
	if !ok {
		// A virtual interface goes with the pod's namespace; a physical
		// one comes back. Nothing is left to give back.
		m.log.Warn("host interface lost: neither in the pod nor on the host", "interface", itf.HostName, "mac", itf.MAC, "network", itf.Network)
		return nil
	}
	if l.Attrs().Name != itf.HostName {
		if err := m.hh.LinkSetDown(l); err != nil {
			return fmt.Errorf("%s down: %w", l.Attrs().Name, err)
		}
		if err := m.hh.LinkSetName(l, itf.HostName); err != nil {
			return fmt.Errorf("renaming %s back to %s on the host: %w", l.Attrs().Name, itf.HostName, err)
		}
	}
	return nil
}

// byMAC finds the (non-virtual-peer) link with mac.
func byMAC(h *netlink.Handle, mac net.HardwareAddr) (netlink.Link, bool) {
	links, err := h.LinkList()
	if err != nil {
		return nil, false
	}
	for _, l := range links {
		if bytes.Equal(l.Attrs().HardwareAddr, mac) && l.Type() != "macvlan" && l.Type() != "bridge" {
			return l, true
		}
	}
	return nil, false
}

// deleteHostLink deletes a host link by name; a missing one is fine.
func (m *Manager) deleteHostLink(name string) error {
	l, err := m.hh.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := m.hh.LinkDel(l); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// The kernel's IPv6 address generation modes (IN6_ADDR_GEN_MODE_* of
// linux/if_link.h).
const (
	in6AddrGenModeEUI64 = 0 // the link-local address from the MAC
	in6AddrGenModeNone  = 1 // no link-local address
)

// configure addresses the pod's interface, brings it (and lo) up and adds
// the network's routes via its gateways. A bridge network's interface
// gets, before it is up, the EUI-64 link-local address of its MAC if it
// has an IPv6 address (whatever the namespace's default mode: port
// security lets it send from that one), and none without (it could send
// no IPv6 through its port).
func (p *podNS) configure(n *network, itf Interface) error {
	l, err := p.h.LinkByName(itf.Name)
	if err != nil {
		return fmt.Errorf("multinet: network %q: %s in %s: %w", n.Name, itf.Name, p.path, err)
	}
	if itf.Kind == KindBridge {
		mode := in6AddrGenModeNone
		if slices.ContainsFunc(itf.Addrs, func(a netip.Prefix) bool { return a.Addr().Is6() }) {
			mode = in6AddrGenModeEUI64
		}
		if err := p.h.LinkSetIP6AddrGenMode(l, mode); err != nil && !errors.Is(err, unix.EAFNOSUPPORT) {
			return fmt.Errorf("multinet: network %q: %s in %s: IPv6 address generation mode: %w", n.Name, itf.Name, p.path, err)
		}
	}
	for _, a := range itf.Addrs {
		addr := &netlink.Addr{IPNet: prefixNet(a)}
		if a.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := p.h.AddrReplace(l, addr); err != nil {
			return fmt.Errorf("multinet: network %q: adding %s to %s in %s: %w", n.Name, a, itf.Name, p.path, err)
		}
	}
	if err := p.h.LinkSetUp(l); err != nil {
		return fmt.Errorf("multinet: network %q: %s up in %s: %w", n.Name, itf.Name, p.path, err)
	}
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: 1, Name: "lo"}}
	if err := p.h.LinkSetUp(lo); err != nil && !isNotFound(err) {
		return fmt.Errorf("multinet: lo up in %s: %w", p.path, err)
	}
	for _, dst := range n.routes {
		for _, gw := range n.gateways {
			if gw.Addr().Is4() != dst.Addr().Is4() {
				continue
			}
			r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefixNet(dst), Gw: gw.Addr().AsSlice()}
			if err := p.h.RouteReplace(r); err != nil {
				return fmt.Errorf("multinet: network %q: route %s via %s in %s: %w", n.Name, dst, gw.Addr(), p.path, err)
			}
			break
		}
	}
	return nil
}
