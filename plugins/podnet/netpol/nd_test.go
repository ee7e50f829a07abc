package netpol_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// TestEnforcer_NeighbourDiscovery: IPv6 finds neighbours with ICMPv6 (not
// ARP), whose answers are not part of a tracked connection: a pod
// isolated for egress must still answer neighbour solicitations, or no
// one reaches it over IPv6 once the neighbour caches are cold, even where
// its ingress allows them.
func TestEnforcer_NeighbourDiscovery(t *testing.T) {
	n := newTestNet(t, "a", "b")
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: n.pods["a"].ips, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: n.pods["b"].ips, Local: true},
	}
	// b: egress denied entirely, ingress open.
	n.apply([]*networkingv1.NetworkPolicy{policy("prod", "b-no-egress", map[string]string{"app": "b"},
		[]networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, nil)}, nil, pods)
	for _, p := range []*testPod{n.pods["a"], n.pods["b"]} {
		testutil.Run(t, "ip", "-n", p.netns, "neigh", "flush", "all")
	}
	if !n.reach(n.pods["a"], n.pods["b"].ips[1], "tcp", 8080) {
		t.Errorf("a did not reach b over IPv6 with the neighbour caches cold: b's neighbour advertisements are dropped as its egress")
	}
	if n.reach(n.pods["b"], n.pods["a"].ips[1], "tcp", 8080) {
		t.Errorf("b reached a over IPv6 with its egress denied")
	}
}

// TestEnforcer_LinkLocal: a pod's IPv6 link-local address, given with its
// addresses (nri-podnet does), leads to its chains too: pods isolated for
// ingress are not reachable over it.
func TestEnforcer_LinkLocal(t *testing.T) {
	n := newTestNet(t, "a", "b")
	ll := func(p *testPod) netip.Addr {
		f := strings.Fields(testutil.Run(t, "ip", "-n", p.netns, "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"))
		if len(f) < 4 {
			t.Fatalf("no link-local address on eth0 of %s", p.netns)
		}
		return netip.MustParsePrefix(f[3]).Addr()
	}
	la, lb := ll(n.pods["a"]), ll(n.pods["b"])
	ping := func() error { return testutil.Ping(n.pods["a"].netns, lb.String()+"%eth0") }
	if err := ping(); err != nil {
		t.Fatalf("before any policy: %v", err)
	}
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", IPs: append(slices.Clone(n.pods["a"].ips), la), Local: true},
		{Namespace: "prod", Name: "b", IPs: append(slices.Clone(n.pods["b"].ips), lb), Local: true},
	}
	n.apply([]*networkingv1.NetworkPolicy{policy("prod", "deny", nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, nil, nil)}, nil, pods)
	if err := ping(); err == nil {
		t.Errorf("a reached b's link-local address %s with b isolated for ingress", lb)
	}
}
