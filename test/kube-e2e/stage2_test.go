package kubee2e

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// testTwoNodes is stage 2: two nodes (network namespaces on the underlay)
// running nrinetd and nri-podnet with their Nodes' pod CIDRs, and an
// outside namespace on the underlay. Pods run with crictl get addresses of
// their node's pod CIDRs (checked against CRI and eth0 by runPod); pods on
// the same node and on different nodes ping each other in both families,
// pods reach the other node's address, and pods reach the outside, which
// sees the node's address. nri-podnet (-kube) makes the routes between the
// nodes and the masquerade; the test makes none, and fails without them.
func testTwoNodes(t *testing.T, cp *controlPlane) {
	start := time.Now()
	outside := newHost(t, cp.u, "nrke-"+cp.token+"-o", "nrke"+cp.token+"o", false)
	nodes := []*node{startNode(t, cp, "a"), startNode(t, cp, "b")}
	a, b := nodes[0], nodes[1]
	for _, n := range nodes {
		t.Logf("node %s: underlay %s %s, pod CIDRs %v", n.name, n.addr4, n.addr6, n.podCIDRs)
	}
	t.Logf("nodes ready in %v", time.Since(start).Round(time.Millisecond))

	// nri-podnet (-kube) makes the routes to the other node's pod CIDRs;
	// the outside has no route to any pod CIDR, so it reaches no pod
	// unless nri-podnet masquerades.
	waitNodeRoutes(t, nodes)

	start = time.Now()
	a1, a2, b1 := a.runPod("a1"), a.runPod("a2"), b.runPod("b1")
	t.Logf("3 pods running in %v: a1 %v, a2 %v, b1 %v", time.Since(start).Round(time.Millisecond), a1.ips, a2.ips, b1.ips)

	// Cross-node IPv6 works from the first packet: no address of a node's
	// bridge waits in duplicate address detection.
	for _, n := range nodes {
		n.checkBridgeNoDAD()
	}

	start = time.Now()
	for _, c := range []struct {
		what string
		from *pod
		to   []netip.Addr
	}{
		{"same node", a1, a2.ips},
		{"same node", a2, a1.ips},
		{"node a to node b", a1, b1.ips},
		{"node a to node b", a2, b1.ips},
		{"node b to node a", b1, append(a1.ips, a2.ips...)},
		{"pod to the other node", a1, []netip.Addr{b.addr4, b.addr6}},
		{"pod to the other node", b1, []netip.Addr{a.addr4, a.addr6}},
		{"pod to the outside", a1, []netip.Addr{outside.addr4, outside.addr6}},
	} {
		for _, to := range c.to {
			t.Run(fmt.Sprintf("%s/%s-%s-%s", c.what, c.from.name, familyOf(to), to), func(t *testing.T) {
				if err := ping(c.from.netns, to); err != nil {
					t.Error(err)
				}
			})
		}
	}
	for _, c := range []struct {
		from *pod
		node *node
	}{{a1, a}, {b1, b}} {
		for _, v4 := range []bool{true, false} {
			// nri-podnet masquerades to the node's address.
			dst, want := outside.addr6, c.node.addr6
			if v4 {
				dst, want = outside.addr4, c.node.addr4
			}
			t.Run(fmt.Sprintf("outside sees/%s-%s", c.from.name, familyOf(dst)), func(t *testing.T) {
				if got := sourceSeen(t, c.from, outside, dst); got != want {
					t.Errorf("a connection from pod %s (%s) to the outside %s comes from %s, want %s", c.from.name, c.from.addr(v4), dst, got, want)
				} else {
					t.Logf("pod %s -> outside %s: source %s", c.from.name, dst, got)
				}
			})
		}
	}
	t.Logf("reachability checked in %v", time.Since(start).Round(time.Millisecond))
}

// sourceSeen connects over TCP from inside pod p to a listener in the
// outside namespace on dst, and returns the source address the outside
// sees.
func sourceSeen(t testing.TB, p *pod, outside *host, dst netip.Addr) netip.Addr {
	t.Helper()
	var l *net.TCPListener
	err := inNetNS(outside.netnsPath, func() error {
		ln, err := net.Listen("tcp", net.JoinHostPort(dst.String(), "0"))
		if err == nil {
			l = ln.(*net.TCPListener)
		}
		return err
	})
	if err != nil {
		t.Fatalf("listening in the outside namespace on %s: %v", dst, err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	var conn net.Conn
	err = inNetNS(filepath.Join(netnsDir, p.netns), func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(dst.String(), strconv.Itoa(port)), 5*time.Second)
		conn = c
		return err
	})
	if err != nil {
		t.Fatalf("connecting from pod %s to the outside %s: %v", p.name, dst, err)
	}
	defer conn.Close()
	l.SetDeadline(time.Now().Add(5 * time.Second))
	in, err := l.Accept()
	if err != nil {
		t.Fatalf("the outside accepting pod %s's connection on %s: %v", p.name, dst, err)
	}
	defer in.Close()
	return in.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
}
