package kubee2e

import (
	"fmt"
	"net/netip"
	"strings"
)

// A clusterFamily is the IP families of a cluster (docs/results/conformance.md,
// "Families"): every part of it, the service range, the cluster and node
// CIDRs, the Nodes' addresses, kube-proxy, CoreDNS's Service and the pod
// network, has addresses of these families only. The zero value is
// familyDual.
type clusterFamily string

const (
	// familyDual is a dual-stack cluster, IPv4 first.
	familyDual clusterFamily = "dual"
	// familyIPv4 and familyIPv6 are single-stack clusters.
	familyIPv4 clusterFamily = "ipv4"
	familyIPv6 clusterFamily = "ipv6"
)

// clusterFamilies are the families make conformance takes, the default
// first.
var clusterFamilies = []clusterFamily{familyDual, familyIPv4, familyIPv6}

// parseClusterFamily returns the family named s ("" is familyDual).
func parseClusterFamily(s string) (clusterFamily, error) {
	if s == "" {
		return familyDual, nil
	}
	for _, f := range clusterFamilies {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("cluster family %q: want dual, ipv4 or ipv6", s)
}

// has4 and has6 say whether the family has IPv4 and IPv6 addresses.
func (f clusterFamily) has4() bool { return f != familyIPv6 }
func (f clusterFamily) has6() bool { return f != familyIPv4 }

// only keeps the addresses of the family, in their order.
func (f clusterFamily) only(addrs ...netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if (a.Is4() && f.has4()) || (a.Is6() && f.has6()) {
			out = append(out, a)
		}
	}
	return out
}

// onlyPrefixes keeps the prefixes of the family, in their order.
func (f clusterFamily) onlyPrefixes(prefixes ...netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range prefixes {
		if len(f.only(p.Addr())) == 1 {
			out = append(out, p)
		}
	}
	return out
}

// clusterCIDRs and serviceCIDRs are the cluster's pod and service ranges,
// IPv4 first; kubeDNS the kube-dns Service's cluster IPs.
func (f clusterFamily) clusterCIDRs() []netip.Prefix {
	return f.onlyPrefixes(clusterCIDR4, clusterCIDR6)
}
func (f clusterFamily) serviceCIDRs() []netip.Prefix {
	return f.onlyPrefixes(serviceCIDR4, serviceCIDR6)
}
func (f clusterFamily) kubeDNS() []netip.Addr { return f.only(kubeDNS4, kubeDNS6) }

// kubernetesService is the kubernetes Service's cluster IP: the first
// address of the primary service range.
func (f clusterFamily) kubernetesService() netip.Addr {
	return f.serviceCIDRs()[0].Addr().Next()
}

// hostAddrs are a host's underlay addresses of the family.
func (f clusterFamily) hostAddrs(h *host) []netip.Addr { return f.only(h.addr4, h.addr6) }

// joinPrefixes and joinAddrs write a comma-separated list, as flags take
// them.
func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
