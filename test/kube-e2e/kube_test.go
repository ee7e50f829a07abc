package kubee2e

import (
	"net/netip"
	"testing"
	"time"
)

// TestKube runs the stages against one control plane (docs/dev/kube-e2e.md).
// Each stage registers Nodes of its own, so that one runs alone too:
// go test -run 'TestKube/^2-'.
func TestKube(t *testing.T) {
	start := time.Now()
	cp := startControlPlane(t)
	t.Logf("control plane up in %v", time.Since(start).Round(time.Millisecond))
	t.Run("1-control-plane", func(t *testing.T) { testControlPlane(t, cp.with(t)) })
	t.Run("2-two-nodes", func(t *testing.T) { testTwoNodes(t, cp.with(t)) })
	t.Run("3-real-node", func(t *testing.T) { testRealNode(t, cp.with(t)) })
}

// with returns the control plane for a subtest: the same processes, with
// t for failures and for the cleanups of what the subtest adds (Nodes).
func (cp *controlPlane) with(t testing.TB) *controlPlane {
	c := *cp
	c.t = t
	return &c
}

// testControlPlane is stage 1: two Nodes registered with dual-stack
// InternalIPs each get one pod CIDR of each family from the
// controller-manager, of the configured sizes, inside the cluster CIDRs,
// and different from each other.
func testControlPlane(t *testing.T, cp *controlPlane) {
	start := time.Now()
	names := []string{"nrke-" + cp.token + "-s1a", "nrke-" + cp.token + "-s1b"}
	for _, name := range names {
		a4, a6 := cp.u.addr()
		cp.registerNode(name, a4, a6)
	}
	seen := map[netip.Prefix]string{}
	for _, name := range names {
		cidrs := cp.podCIDRs(name)
		t.Logf("Node %s: spec.podCIDRs %v", name, cidrs)
		checkPodCIDRs(t, cp.family(), name, cidrs)
		for _, c := range cidrs {
			if other, ok := seen[c]; ok {
				t.Errorf("Nodes %s and %s both have pod CIDR %s", other, name, c)
			}
			seen[c] = name
		}
	}
	t.Logf("pod CIDRs of both Nodes allocated in %v", time.Since(start).Round(time.Millisecond))
}

// checkPodCIDRs checks that a Node's pod CIDRs are, for each family of
// family, one /nodeMask4 within clusterCIDR4 and one /nodeMask6 within
// clusterCIDR6, IPv4 first (the order of --cluster-cidr).
func checkPodCIDRs(t testing.TB, family clusterFamily, node string, cidrs []netip.Prefix) {
	t.Helper()
	clusters := family.clusterCIDRs()
	if len(cidrs) != len(clusters) {
		t.Fatalf("Node %s: spec.podCIDRs %v, want one of each family of %s", node, cidrs, family)
	}
	for i, cluster := range clusters {
		bits := nodeMask4
		if cluster.Addr().Is6() {
			bits = nodeMask6
		}
		c := cidrs[i]
		if c.Bits() != bits || !cluster.Contains(c.Addr()) || c.Masked() != c {
			t.Errorf("Node %s: pod CIDR %d is %s, want a /%d of %s", node, i, c, bits, cluster)
		}
	}
}
