package kubee2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
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

// TestClusterFamily checks, without a cluster, what each family gives the
// cluster's parts: the ranges and addresses of its families only, IPv4
// first, and the kubernetes Service's address in the primary range.
func TestClusterFamily(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		family                clusterFamily
		clusters, services    string
		kubeDNS, kubernetesIP string
	}{
		{"", familyDual, "198.19.0.0/17,fd00:198:18:d000::/56", "198.19.255.0/24,fd00:198:18:ffff::/112",
			"198.19.255.10,fd00:198:18:ffff::a", "198.19.255.1"},
		{"dual", familyDual, "198.19.0.0/17,fd00:198:18:d000::/56", "198.19.255.0/24,fd00:198:18:ffff::/112",
			"198.19.255.10,fd00:198:18:ffff::a", "198.19.255.1"},
		{"ipv4", familyIPv4, "198.19.0.0/17", "198.19.255.0/24", "198.19.255.10", "198.19.255.1"},
		{"ipv6", familyIPv6, "fd00:198:18:d000::/56", "fd00:198:18:ffff::/112", "fd00:198:18:ffff::a", "fd00:198:18:ffff::1"},
	} {
		f, err := parseClusterFamily(tc.name)
		if err != nil || f != tc.family {
			t.Errorf("parseClusterFamily(%q) = %q, %v; want %q", tc.name, f, err, tc.family)
			continue
		}
		if got := joinPrefixes(f.clusterCIDRs()); got != tc.clusters {
			t.Errorf("%s: cluster CIDRs %s, want %s", f, got, tc.clusters)
		}
		if got := joinPrefixes(f.serviceCIDRs()); got != tc.services {
			t.Errorf("%s: service CIDRs %s, want %s", f, got, tc.services)
		}
		if got := joinAddrs(f.kubeDNS()); got != tc.kubeDNS {
			t.Errorf("%s: kube-dns %s, want %s", f, got, tc.kubeDNS)
		}
		if got := f.kubernetesService().String(); got != tc.kubernetesIP {
			t.Errorf("%s: kubernetes Service %s, want %s", f, got, tc.kubernetesIP)
		}
		h := &host{addr4: netip.MustParseAddr("198.18.7.2"), addr6: netip.MustParseAddr("fd00:198:18:c007::2")}
		addrs := f.hostAddrs(h)
		if len(addrs) != len(f.clusterCIDRs()) {
			t.Errorf("%s: node addresses %v, want one per family", f, addrs)
		}
		for _, a := range addrs {
			if (a.Is4() && !f.has4()) || (a.Is6() && !f.has6()) {
				t.Errorf("%s: node address %s of another family", f, a)
			}
		}
	}
	for _, bad := range []string{"IPv4", "v6", "both"} {
		if _, err := parseClusterFamily(bad); err == nil {
			t.Errorf("parseClusterFamily(%q): no error", bad)
		}
	}
}
