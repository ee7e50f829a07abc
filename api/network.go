package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// NetworkExtensionVersion is the version of the pod network extension this
// package implements, as advertised in ConfigureRequest.network_extension.
const NetworkExtensionVersion = 1

// Owner keys of a PodNetworkRecord.
const (
	OwnerIPv4 = "ips/ipv4"
	OwnerIPv6 = "ips/ipv6"
	OwnerDNS  = "dns"
)

// OwnerInterface, OwnerRoute and OwnerInfo return the owner key of an
// interface, a route destination and an info key.
func OwnerInterface(name string) string { return "interface/" + name }

// OwnerRoute returns the owner key of a route destination.
func OwnerRoute(dst string) string { return "route/" + dst }

// OwnerInfo returns the owner key of an info entry.
func OwnerInfo(key string) string { return "info/" + key }

// ErrInvalidNetwork is wrapped by every error of NormalizeNetwork.
var ErrInvalidNetwork = errors.New("invalid pod network")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidNetwork}, args...)...)
}

// limitedBroadcast is 255.255.255.255, the IPv4 limited broadcast address.
var limitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// ParsePodAddress parses a pod address given as a bare IP or a CIDR and
// returns the IP. It refuses what cannot be a pod's address: loopback,
// unspecified, multicast and link-local addresses, the limited broadcast
// address 255.255.255.255, and zones; given as a CIDR, also the subnet's
// network address and IPv4 broadcast address (see [NormalizeNetwork]).
// IPv4-mapped IPv6 addresses become IPv4.
func ParsePodAddress(s string) (netip.Addr, error) {
	if strings.Contains(s, "/") {
		p, err := parsePodPrefix(s)
		return p.Addr(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, invalid("address %q: %v", s, err)
	}
	if a.Zone() != "" { // before Unmap, which drops it
		return netip.Addr{}, invalid("address %q: zones are not allowed", s)
	}
	a = a.Unmap() // check what the address will be
	if err := checkPodAddr(s, a); err != nil {
		return netip.Addr{}, err
	}
	return a, nil
}

// checkPodAddr returns why a, written s, cannot be a pod's address, or nil.
func checkPodAddr(s string, a netip.Addr) error {
	switch {
	case a.Zone() != "":
		return invalid("address %q: zones are not allowed", s)
	case a.IsLoopback():
		return invalid("address %q is a loopback address", s)
	case a.IsUnspecified():
		return invalid("address %q is unspecified", s)
	case a.IsMulticast():
		return invalid("address %q is a multicast address", s)
	case a.IsLinkLocalUnicast():
		return invalid("address %q is a link-local address", s)
	case a == limitedBroadcast:
		return invalid("address %q is the limited broadcast address", s)
	}
	return nil
}

// parsePodPrefix parses a pod address given as a CIDR, such as
// "198.18.0.5/24", and returns it unmapped, with its host bits. Besides
// what checkPodAddr refuses, the address must not be the subnet's network
// address (host bits all zero) nor, for IPv4, its broadcast address (host
// bits all ones); IPv4 /31 and /32 and IPv6 /127 and /128 have no such
// addresses (RFC 3021, RFC 6164).
func parsePodPrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, invalid("address %q: want a CIDR such as 198.18.0.5/24: %v", s, err)
	}
	if p, err = unmapPrefix(s, p); err != nil {
		return netip.Prefix{}, err
	}
	a := p.Addr()
	if err := checkPodAddr(s, a); err != nil {
		return netip.Prefix{}, err
	}
	if p.Bits() >= a.BitLen()-1 {
		return p, nil
	}
	subnet := p.Masked()
	if a == subnet.Addr() {
		return netip.Prefix{}, invalid("address %q is the network address of %s", s, subnet)
	}
	if a.Is4() && a == lastAddr(subnet) {
		return netip.Prefix{}, invalid("address %q is the broadcast address of %s", s, subnet)
	}
	return p, nil
}

// lastAddr returns the last address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix into the IPv4 prefix.
func unmapPrefix(s string, p netip.Prefix) (netip.Prefix, error) {
	if !p.Addr().Is4In6() {
		return p, nil
	}
	if p.Bits() < 96 {
		return p, invalid("%q: prefix too short for an IPv4-mapped address", s)
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96), nil
}

// isUnicast reports whether a, unmapped, can be a host's address: not
// unspecified, multicast or the limited broadcast address. Gateways and
// DNS servers may be link-local (fe80::1 is the usual IPv6 gateway).
func isUnicast(a netip.Addr) bool {
	return !a.IsUnspecified() && !a.IsMulticast() && a != limitedBroadcast
}

// checkIfName checks an interface name the way the kernel would.
func checkIfName(what, name string) error {
	bad := name == "" || len(name) > 15 || name == "." || name == ".."
	for i := 0; i < len(name) && !bad; i++ {
		c := name[i]
		bad = c <= ' ' || c == 0x7f || c == '/' || c == ':'
	}
	if bad {
		return invalid("%s %q: not a valid interface name", what, name)
	}
	return nil
}

// NormalizeNetwork validates n and returns a normalized copy: addresses in
// canonical form (ips as bare IPs, interface addresses as CIDRs, route
// destinations as masked prefixes), MACs in lower-case colon form. A nil
// network normalizes to nil.
//
// It refuses, with an error wrapping [ErrInvalidNetwork] and naming the
// value:
//   - a pod address (in ips or on an interface) that does not parse, is
//     zoned, loopback, unspecified, multicast, link-local (169.254.0.0/16,
//     fe80::/10) or 255.255.255.255;
//   - a pod address given as a CIDR that is its subnet's network address
//     (host bits all zero) or IPv4 broadcast address (host bits all ones),
//     except in IPv4 /31 and /32 and IPv6 /127 and /128 subnets;
//   - an address listed twice in ips, or on two interfaces, or twice on
//     one (an address in ips that is also an interface's is normal);
//   - an interface address that is not a CIDR, an interface name the
//     kernel would refuse or listed twice, a MAC that is not 48 bits, an
//     MTU outside 68..65535;
//   - a route destination that is not a prefix (or "default"), a route to
//     a destination listed twice, a gateway of the other family or that is
//     zoned, loopback, unspecified, multicast or 255.255.255.255;
//   - a DNS server that is not an IP address, or is zoned, unspecified,
//     multicast or 255.255.255.255; an empty DNS search or option, or one
//     with white space; an empty info key.
//
// Whether a route's interface exists is not checked here: it may belong
// to another plugin's part of the pod's network.
func NormalizeNetwork(n *PodSandboxNetwork) (*PodSandboxNetwork, error) {
	if n == nil {
		return nil, nil
	}
	out := &PodSandboxNetwork{}
	ips := map[netip.Addr]bool{}
	for _, s := range n.GetIps() {
		a, err := ParsePodAddress(s)
		if err != nil {
			return nil, err
		}
		if ips[a] {
			return nil, invalid("address %q: %s is listed twice in ips", s, a)
		}
		ips[a] = true
		out.Ips = append(out.Ips, a.String())
	}
	onItf := map[netip.Addr]string{} // interface address -> interface name
	names := map[string]bool{}
	for _, itf := range n.GetInterfaces() {
		if err := checkIfName("interface", itf.GetName()); err != nil {
			return nil, err
		}
		if names[itf.GetName()] {
			return nil, invalid("interface %q listed twice", itf.GetName())
		}
		names[itf.GetName()] = true
		ni := &NetworkInterface{Name: itf.GetName(), Mtu: itf.GetMtu()}
		if mac := itf.GetMac(); mac != "" {
			hw, err := net.ParseMAC(mac)
			if err != nil || len(hw) != 6 {
				return nil, invalid("interface %q: MAC %q is not a 48-bit hardware address", itf.GetName(), mac)
			}
			ni.Mac = hw.String()
		}
		if mtu := itf.GetMtu(); mtu != 0 && (mtu < 68 || mtu > 65535) {
			return nil, invalid("interface %q: MTU %d is outside 68..65535", itf.GetName(), mtu)
		}
		for _, s := range itf.GetAddresses() {
			p, err := parsePodPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("interface %q: %w", itf.GetName(), err)
			}
			if other, ok := onItf[p.Addr()]; ok {
				return nil, invalid("interface %q: address %q: %s is already an address of interface %q", itf.GetName(), s, p.Addr(), other)
			}
			onItf[p.Addr()] = itf.GetName()
			ni.Addresses = append(ni.Addresses, p.String())
		}
		out.Interfaces = append(out.Interfaces, ni)
	}
	dsts := map[string]bool{}
	for _, r := range n.GetRoutes() {
		nr, err := normalizeRoute(r)
		if err != nil {
			return nil, err
		}
		if dsts[nr.Destination] {
			return nil, invalid("route to %q listed twice", nr.Destination)
		}
		dsts[nr.Destination] = true
		out.Routes = append(out.Routes, nr)
	}
	if d := n.GetDns(); d != nil && len(d.GetServers())+len(d.GetSearches())+len(d.GetOptions()) > 0 {
		nd := &NetworkDNS{Searches: slices.Clone(d.GetSearches()), Options: slices.Clone(d.GetOptions())}
		for _, s := range d.GetServers() {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" || !isUnicast(a.Unmap()) {
				return nil, invalid("DNS server %q is not a usable IP address", s)
			}
			a = a.Unmap()
			nd.Servers = append(nd.Servers, a.String())
		}
		for _, s := range append(slices.Clone(nd.Searches), nd.Options...) {
			if s == "" || strings.ContainsAny(s, " \t\n") {
				return nil, invalid("DNS search domain or option %q is empty or has white space", s)
			}
		}
		out.Dns = nd
	}
	for k, v := range n.GetInfo() {
		if k == "" {
			return nil, invalid("info key is empty")
		}
		if out.Info == nil {
			out.Info = map[string]string{}
		}
		out.Info[k] = v
	}
	return out, nil
}

func normalizeRoute(r *NetworkRoute) (*NetworkRoute, error) {
	dst := r.GetDestination()
	if dst == "default" {
		dst = "0.0.0.0/0"
		if gw, err := netip.ParseAddr(r.GetGateway()); err == nil && gw.Unmap().Is6() {
			dst = "::/0"
		}
	}
	p, err := netip.ParsePrefix(dst)
	if err != nil {
		return nil, invalid("route destination %q: want a prefix such as 0.0.0.0/0: %v", r.GetDestination(), err)
	}
	if p.Addr().Zone() != "" {
		return nil, invalid("route destination %q: zones are not allowed", r.GetDestination())
	}
	if p, err = unmapPrefix(r.GetDestination(), p); err != nil {
		return nil, err
	}
	nr := &NetworkRoute{Destination: p.Masked().String(), Interface: r.GetInterface()}
	if gw := r.GetGateway(); gw != "" {
		a, err := netip.ParseAddr(gw)
		if err != nil {
			return nil, invalid("route to %q: gateway %q: %v", nr.Destination, gw, err)
		}
		if a.Zone() != "" { // before Unmap, which drops it
			return nil, invalid("route to %q: gateway %q: zones are not allowed", nr.Destination, gw)
		}
		a = a.Unmap()
		if a.Is4() != p.Addr().Is4() {
			return nil, invalid("route to %q: gateway %q is of the other IP family", nr.Destination, gw)
		}
		if !isUnicast(a) || a.IsLoopback() {
			return nil, invalid("route to %q: gateway %q is not a usable next hop", nr.Destination, gw)
		}
		nr.Gateway = a.String()
	}
	if nr.Interface != "" {
		if err := checkIfName("route interface", nr.Interface); err != nil {
			return nil, err
		}
	}
	return nr, nil
}

// NetworkAddresses returns the pod addresses of a normalized network: its
// ips, then the addresses of its interfaces, as bare IPs without
// duplicates.
func NetworkAddresses(n *PodSandboxNetwork) []netip.Addr {
	var out []netip.Addr
	add := func(a netip.Addr) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, s := range n.GetIps() {
		if a, err := netip.ParseAddr(s); err == nil {
			add(a)
		}
	}
	for _, itf := range n.GetInterfaces() {
		for _, s := range itf.GetAddresses() {
			if p, err := netip.ParsePrefix(s); err == nil {
				add(p.Addr())
			}
		}
	}
	return out
}

// FamilyOwnerKey returns the owner key of a's IP family.
func FamilyOwnerKey(a netip.Addr) string {
	if a.Is4() {
		return OwnerIPv4
	}
	return OwnerIPv6
}
