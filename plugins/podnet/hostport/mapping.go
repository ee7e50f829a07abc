package hostport

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/nrinet/nrinet/plugins/podnet/internal/l4proto"
)

// Protocol is the transport protocol of a [Mapping], by its IP protocol
// number (nri-podnet's one protocol type, shared with netpol).
type Protocol = l4proto.Protocol

// Protocols, with the values of their IP protocol numbers.
const (
	TCP  = l4proto.TCP
	UDP  = l4proto.UDP
	SCTP = l4proto.SCTP
)

// Mapping publishes a pod's port on the node: traffic to HostIP:HostPort
// (Protocol) goes to ContainerPort of the pod.
type Mapping struct {
	Protocol      Protocol
	HostPort      uint16
	ContainerPort uint16
	// HostIP is the node address the port is published on. The zero
	// Addr means every local address of the node, in each family the pod
	// has an address of; 0.0.0.0 every local IPv4 address, :: every local
	// IPv6 address; any other address that address only (and so only the
	// pod's address of its family).
	HostIP netip.Addr
}

// String describes the mapping as "tcp 198.18.0.1:8080 -> 80" ("*" for
// every local address).
func (m Mapping) String() string { return m.hostSide() + " -> " + strconv.Itoa(int(m.ContainerPort)) }

// hostSide is "tcp 198.18.0.1:8080", "tcp *:8080", "udp [fd00::1]:53".
func (m Mapping) hostSide() string {
	host := "*"
	if m.HostIP.IsValid() {
		host = m.HostIP.String() // 0.0.0.0 and :: as such
	}
	if m.HostIP.Is6() {
		host = "[" + host + "]"
	}
	return m.Protocol.String() + " " + host + ":" + strconv.Itoa(int(m.HostPort))
}

// PodRef names a pod in errors and logs: "namespace/name" (the ID when
// the pod has no name).
type PodRef struct {
	ID, Namespace, Name string
}

func (r PodRef) String() string {
	if r.Name == "" {
		return r.ID
	}
	return r.Namespace + "/" + r.Name
}

// Pod is a pod whose ports are published: its addresses (at most one per
// family) and its mappings.
type Pod struct {
	PodRef
	Addrs    []netip.Addr
	Mappings []Mapping
}

// bind is one (family, destination) a mapping is published on: what
// collides with other mappings and what one DNAT rule per hook matches.
type bind struct {
	m    Mapping
	v6   bool
	dst  netip.Addr // the zero Addr: every local address of the family
	addr netip.Addr // the pod's address of the family, the DNAT target
}

// family is "ipv4" or "ipv6", the bind's family.
func (b bind) family() string {
	if b.v6 {
		return "ipv6"
	}
	return "ipv4"
}

// overlaps reports whether two binds ask for the same thing: same
// protocol, port and family, and the same address or every one.
func (b bind) overlaps(o bind) bool {
	return b.m.Protocol == o.m.Protocol && b.m.HostPort == o.m.HostPort && b.v6 == o.v6 &&
		(!b.dst.IsValid() || !o.dst.IsValid() || b.dst == o.dst)
}

// binds checks pod's mappings and returns what they are published on.
// Mappings without a host port are left out (the pod only declares the
// port). A mapping that repeats another of the pod's is an error.
func (p Pod) binds() ([]bind, error) {
	var v4, v6 netip.Addr
	for _, a := range p.Addrs {
		a = a.Unmap()
		switch {
		case a.Is4() && !v4.IsValid():
			v4 = a
		case a.Is6() && !v6.IsValid() && a.Zone() == "":
			v6 = a
		}
	}
	var out []bind
	for _, m := range p.Mappings {
		if m.HostPort == 0 {
			continue
		}
		if !m.Protocol.Known() {
			return nil, invalid(p.PodRef, m, "protocol %d is none of tcp, udp, sctp", m.Protocol)
		}
		if m.ContainerPort == 0 {
			return nil, invalid(p.PodRef, m, "container port 0")
		}
		ip := m.HostIP.Unmap()
		if ip.Zone() != "" {
			return nil, invalid(p.PodRef, m, "host IP %s has a zone", m.HostIP)
		}
		m.HostIP = ip
		var fams []bool // v6?
		switch {
		case !ip.IsValid():
			if v4.IsValid() {
				fams = append(fams, false)
			}
			if v6.IsValid() {
				fams = append(fams, true)
			}
			if len(fams) == 0 {
				return nil, invalid(p.PodRef, m, "the pod has no address")
			}
		case ip.Is4() && !v4.IsValid():
			return nil, invalid(p.PodRef, m, "host IP %s is IPv4 and the pod has no IPv4 address", ip)
		case ip.Is6() && !v6.IsValid():
			return nil, invalid(p.PodRef, m, "host IP %s is IPv6 and the pod has no IPv6 address", ip)
		default:
			fams = append(fams, ip.Is6())
		}
		for _, is6 := range fams {
			b := bind{m: m, v6: is6, addr: v4}
			if is6 {
				b.addr = v6
			}
			if ip.IsValid() && !ip.IsUnspecified() {
				b.dst = ip
			}
			if i := slices.IndexFunc(out, b.overlaps); i >= 0 {
				return nil, invalid(p.PodRef, m, "overlaps the pod's own mapping %s", out[i].m)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// ParseHostIP parses a mapping's host IP as the runtime gives it: ""
// (every local address) or an IPv4 or IPv6 address.
func ParseHostIP(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: host IP %q: %v", ErrInvalidMapping, s, err)
	}
	return a.Unmap(), nil
}
