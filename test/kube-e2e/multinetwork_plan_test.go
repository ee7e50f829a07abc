package kubee2e

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// TestComplement checks complement on the plan's kinds of parts.
func TestComplement(t *testing.T) {
	for _, c := range []struct {
		s, own string
		want   []string
	}{
		{"198.19.160.0/24", "198.19.160.0/24", nil},
		{"198.19.160.0/24", "198.19.160.0/25", []string{"198.19.160.128/25"}},
		{"198.19.160.0/24", "198.19.160.128/26", []string{"198.19.160.0/25", "198.19.160.192/26"}},
		{"fd00:198:18:e0a0::/120", "fd00:198:18:e0a0::80/122", []string{"fd00:198:18:e0a0::/121", "fd00:198:18:e0a0::c0/122"}},
	} {
		var got []string
		for _, p := range complement(netip.MustParsePrefix(c.s), netip.MustParsePrefix(c.own)) {
			got = append(got, p.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("complement(%s, %s) = %v, want %v", c.s, c.own, got, c.want)
		}
	}
}

// TestMultinetPlan checks the multi-network stage's plan without a
// cluster: each node's configuration passes nri-podnet's validation
// (multinet.FromBytes); the two nodes' parts of a network do not overlap;
// the far end's addresses are in no node's part; every address is in
// 198.18.0.0/15 or fd00:198:18::/48, outside the suite's cluster and
// service ranges.
func TestMultinetPlan(t *testing.T) {
	for _, suffix := range []string{"a", "b"} {
		if _, err := multinet.FromBytes([]byte(nodeMultinetConfig(suffix))); err != nil {
			t.Errorf("node %s: %v\n%s", suffix, err, nodeMultinetConfig(suffix))
		}
	}
	test4, test6 := netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("fd00:198:18::/48")
	suite := []netip.Prefix{clusterCIDR4, clusterCIDR6, serviceCIDR4, serviceCIDR6}
	for _, n := range multinetPlan {
		for i, s := range n.subnets {
			if !test4.Contains(s.Addr()) && !test6.Contains(s.Addr()) {
				t.Errorf("network %s: subnet %s outside the test ranges", n.name, s)
			}
			for _, p := range suite {
				if p.Overlaps(s) {
					t.Errorf("network %s: subnet %s overlaps the suite's %s", n.name, s, p)
				}
			}
			var parts []netip.Prefix
			for suffix, own := range n.own {
				if !s.Contains(own[i].Addr()) || own[i].Bits() < s.Bits() {
					t.Errorf("network %s: node %s's part %s is not in %s", n.name, suffix, own[i], s)
				}
				for _, other := range parts {
					if other.Overlaps(own[i]) {
						t.Errorf("network %s: parts %s and %s overlap", n.name, other, own[i])
					}
				}
				parts = append(parts, own[i])
				if n.farEnd && own[i].Contains(farEndAddr(s)) {
					t.Errorf("network %s: the far end's %s is in node %s's part %s", n.name, farEndAddr(s), suffix, own[i])
				}
			}
		}
	}
}
