package kube

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ErrInvalidNode is wrapped by the errors of [NodeFromObject]: a Node whose
// pod CIDRs or addresses cannot be used. The message names the Node and
// the value.
var ErrInvalidNode = errors.New("kube: unusable Node")

// Node is what the package uses of a Kubernetes Node.
type Node struct {
	Name string
	// PodCIDRs from spec.podCIDRs (spec.podCIDR if that is empty): at most
	// one per family, IPv4 first.
	PodCIDRs []netip.Prefix
	// InternalIPs from status.addresses of type InternalIP: the first of
	// each family, IPv4 first.
	InternalIPs []netip.Addr
}

// NodeFromObject reads a Node object. Pod CIDRs that do not parse, have
// host bits set, or are two of one family make it fail; an InternalIP that
// does not parse is an error too.
func NodeFromObject(n *corev1.Node) (Node, error) {
	out := Node{Name: n.Name}
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return out, fmt.Errorf("%w: Node %s: pod CIDR %q: %v", ErrInvalidNode, n.Name, s, err)
		}
		if p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			return out, fmt.Errorf("%w: Node %s: pod CIDR %s is not a network prefix", ErrInvalidNode, n.Name, s)
		}
		if slices.ContainsFunc(out.PodCIDRs, func(q netip.Prefix) bool { return q.Addr().Is4() == p.Addr().Is4() }) {
			return out, fmt.Errorf("%w: Node %s: two pod CIDRs of one family in %q", ErrInvalidNode, n.Name, cidrs)
		}
		out.PodCIDRs = append(out.PodCIDRs, p)
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || ip.Zone() != "" {
			return out, fmt.Errorf("%w: Node %s: InternalIP %q is not an IP address", ErrInvalidNode, n.Name, a.Address)
		}
		ip = ip.Unmap()
		if !slices.ContainsFunc(out.InternalIPs, func(q netip.Addr) bool { return q.Is4() == ip.Is4() }) {
			out.InternalIPs = append(out.InternalIPs, ip)
		}
	}
	v4First := func(a, b bool) int {
		switch {
		case a == b:
			return 0
		case a:
			return -1
		}
		return 1
	}
	slices.SortStableFunc(out.PodCIDRs, func(a, b netip.Prefix) int { return v4First(a.Addr().Is4(), b.Addr().Is4()) })
	slices.SortStableFunc(out.InternalIPs, func(a, b netip.Addr) int { return v4First(a.Is4(), b.Is4()) })
	return out, nil
}

// slimNode keeps only what [NodeFromObject] reads (name, pod CIDRs,
// addresses), so that the informer's cache holds no images, conditions or
// managed fields of large clusters' Nodes. Anything that is not a Node
// passes unchanged.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	s := &corev1.Node{}
	s.Name, s.UID, s.ResourceVersion = n.Name, n.UID, n.ResourceVersion
	s.Spec.PodCIDR, s.Spec.PodCIDRs = n.Spec.PodCIDR, n.Spec.PodCIDRs
	s.Status.Addresses = n.Status.Addresses
	return s, nil
}

// Route is a route to another node's pod CIDR via its InternalIP.
type Route struct {
	Dst  netip.Prefix
	Via  netip.Addr
	Node string // whose pod CIDR; empty for a route read from the kernel
}

func (r Route) String() string {
	if r.Node == "" {
		return r.Dst.String() + " via " + r.Via.String()
	}
	return r.Dst.String() + " via " + r.Via.String() + " (Node " + r.Node + ")"
}

// RoutesFor computes the routes this node wants: for every other Node,
// each pod CIDR via that Node's InternalIP of the same family. It skips,
// and reports in skipped, a pod CIDR with no InternalIP of its family, and
// one that overlaps a pod CIDR of this node's (own) or one already routed
// (two Nodes claiming one range): a route there would take this node's
// own pods' traffic, or send it to whichever Node came first. The routes
// are sorted by destination.
func RoutesFor(self string, own []netip.Prefix, nodes []Node) (routes []Route, skipped []string) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	var taken prefixIndex
	for _, p := range own {
		taken.add(p, "this node's pod CIDR")
	}
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		for _, p := range n.PodCIDRs {
			i := slices.IndexFunc(n.InternalIPs, func(a netip.Addr) bool { return a.Is4() == p.Addr().Is4() })
			if i < 0 {
				skipped = append(skipped, fmt.Sprintf("Node %s: pod CIDR %s: no InternalIP of its family in %v", n.Name, p, n.InternalIPs))
				continue
			}
			if q, whose, ok := taken.overlapping(p); ok {
				skipped = append(skipped, fmt.Sprintf("Node %s: pod CIDR %s overlaps %s %s", n.Name, p, whose, q))
				continue
			}
			taken.add(p, "the pod CIDR of Node "+n.Name)
			routes = append(routes, Route{Dst: p, Via: n.InternalIPs[i], Node: n.Name})
		}
	}
	slices.SortFunc(routes, func(a, b Route) int { return comparePrefix(a.Dst, b.Dst) })
	return routes, skipped
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// prefixIndex holds prefixes that do not overlap, each with a note of
// whose it is, and finds the one a prefix overlaps in logarithmic time
// (RoutesFor checks every pod CIDR of a cluster's Nodes). Two prefixes
// overlap when one contains the other: a shorter one held is found by
// masking the prefix to each length held; a longer one by the first
// address held at or after the prefix's own.
type prefixIndex struct {
	byLen  map[int]map[netip.Prefix]string
	lens   []int          // the lengths in byLen, ascending
	sorted []netip.Prefix // by first address
}

func (x *prefixIndex) add(p netip.Prefix, whose string) {
	p = p.Masked()
	if x.byLen == nil {
		x.byLen = map[int]map[netip.Prefix]string{}
	}
	m := x.byLen[p.Bits()]
	if m == nil {
		m = map[netip.Prefix]string{}
		x.byLen[p.Bits()] = m
		i, _ := slices.BinarySearch(x.lens, p.Bits())
		x.lens = slices.Insert(x.lens, i, p.Bits())
	}
	m[p] = whose
	i, _ := slices.BinarySearchFunc(x.sorted, p, comparePrefix)
	x.sorted = slices.Insert(x.sorted, i, p)
}

// overlapping returns a prefix held that overlaps p, and whose it is.
func (x *prefixIndex) overlapping(p netip.Prefix) (netip.Prefix, string, bool) {
	p = p.Masked()
	for _, l := range x.lens {
		if l > p.Bits() {
			break
		}
		q := netip.PrefixFrom(p.Addr(), l).Masked()
		if whose, ok := x.byLen[l][q]; ok {
			return q, whose, true
		}
	}
	i, _ := slices.BinarySearchFunc(x.sorted, p, comparePrefix)
	if i < len(x.sorted) && p.Contains(x.sorted[i].Addr()) {
		q := x.sorted[i]
		return q, x.byLen[q.Bits()][q], true
	}
	return netip.Prefix{}, "", false
}
