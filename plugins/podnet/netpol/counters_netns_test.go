package netpol_test

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

func udpPort(p int) networkingv1.NetworkPolicyPort {
	proto := corev1.ProtocolUDP
	port := intstr.FromInt32(int32(p))
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
}

// sendUDP sends count one-byte datagrams from one socket of from to
// to:port, and waits for no answer: each is a packet of a connection
// conntrack has not seen answered, so each meets the pods' chains.
func (n *testNet) sendUDP(from *testPod, to netip.Addr, port, count int) {
	n.t.Helper()
	err := testutil.InNetNS("/var/run/netns/"+from.netns, func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(to, uint16(port)).String())
		if err != nil {
			return err
		}
		defer c.Close()
		for range count {
			if _, err := c.Write([]byte{7}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func counters(t *testing.T, e *netpol.Enforcer) netpol.Counters {
	t.Helper()
	c, err := e.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEnforcer_Counters sends real UDP traffic, IPv4 and IPv6, and reads
// the table's named counters: each packet that opens a connection is
// counted for the policy whose rule allowed it, in its direction, or
// for the pod whose chain dropped it; a policy or pod gone from the
// program takes its counters with it, and the others keep counting
// through the change.
func TestEnforcer_Counters(t *testing.T) {
	n := newTestNet(t, "a", "b", "c")
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: n.pods["a"].ips, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: n.pods["b"].ips, Local: true},
		{Namespace: "prod", Name: "c", Labels: map[string]string{"app": "c"}, IPs: n.pods["c"].ips, Local: true},
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	bFromA := policy("prod", "b-from-a", map[string]string{"app": "b"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("a")}}, Ports: []networkingv1.NetworkPolicyPort{udpPort(8080)}}}, nil)
	bDeny := policy("prod", "b-deny", map[string]string{"app": "b"}, nil, nil, nil)
	cToB := policy("prod", "c-to-b", map[string]string{"app": "c"}, egress, nil,
		[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("b")}}, Ports: []networkingv1.NetworkPolicyPort{udpPort(8080)}}})

	if c := counters(t, n.enf); len(c.Allowed)+len(c.Denied) != 0 || c.Logging {
		t.Errorf("Counters before any Sync = %+v, want none", c)
	}
	n.apply([]*networkingv1.NetworkPolicy{bFromA, bDeny, cToB}, nil, pods)
	c := counters(t, n.enf)
	wantAllowed := []netpol.Count{
		{Policy: "prod/b-deny", Direction: netpol.Ingress},
		{Policy: "prod/b-from-a", Direction: netpol.Ingress},
		{Policy: "prod/c-to-b", Direction: netpol.Egress},
	}
	wantDenied := []netpol.Count{{Pod: "prod/b", Direction: netpol.Ingress}, {Pod: "prod/c", Direction: netpol.Egress}}
	if !slices.Equal(c.Allowed, wantAllowed) || !slices.Equal(c.Denied, wantDenied) {
		t.Fatalf("Counters after Sync = %+v, want allowed %+v and denied %+v, all at 0", c, wantAllowed, wantDenied)
	}

	for _, i := range []int{0, 1} { // IPv4, IPv6
		if !n.reach(n.pods["a"], n.pods["b"].ips[i], "udp", 8080) {
			t.Errorf("a did not reach b's %s", n.pods["b"].ips[i])
		}
	}
	n.sendUDP(n.pods["c"], n.pods["b"].ips[0], 8080, 3) // c's egress allows it, b's ingress not
	n.sendUDP(n.pods["c"], n.pods["b"].ips[1], 8080, 2)
	n.sendUDP(n.pods["c"], n.pods["a"].ips[1], 8080, 4) // c's egress denies it
	n.sendUDP(n.pods["a"], n.pods["c"].ips[0], 8080, 1) // neither isolates it: no counter
	// The requests; the answers are of established connections.
	wantAllowed[1].Packets = 2
	wantAllowed[2].Packets = 5
	wantDenied[0].Packets, wantDenied[1].Packets = 5, 4
	testutil.WaitFor(t, "the counters", 5*time.Second, func() bool {
		c = counters(t, n.enf)
		return slices.Equal(c.Allowed, wantAllowed) && slices.Equal(c.Denied, wantDenied)
	})

	// c-to-b gone: its counter and c's (no longer isolated) go; b's stay
	// and keep counting (the change is written as a delta).
	n.apply([]*networkingv1.NetworkPolicy{bFromA, bDeny}, nil, pods)
	n.sendUDP(n.pods["c"], n.pods["b"].ips[0], 8080, 1)
	wantDenied[0].Packets++
	testutil.WaitFor(t, "the counters after c-to-b's deletion", 5*time.Second, func() bool {
		c = counters(t, n.enf)
		return slices.Equal(c.Allowed, wantAllowed[:2]) && slices.Equal(c.Denied, wantDenied[:1])
	})
	if c.Unlogged != 0 || c.Logged != 0 || c.Logging {
		t.Errorf("Counters = %+v: logging counts without WithLogDenied", c)
	}
}
