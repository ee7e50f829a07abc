package netpol_test

import (
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
