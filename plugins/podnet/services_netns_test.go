package podnet_test

import (
	be "encoding/binary"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// fakeProxy stands in for kube-proxy in the node's namespace: a table
// (inet, named after the test's namespaces) that DNATs TCP port 80 of a
// ClusterIP of each family to port 8080 of an endpoint, and masquerades
// the endpoint's connections to itself (kube-proxy's hairpin
// masquerade).
func (e *nodeEnv) fakeProxy(clusterIPs, endpoints []netip.Addr) {
	e.t.Helper()
	f, err := os.Open(e.nodePath)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		e.t.Fatal(err)
	}
	tb := c.AddTable(&nftables.Table{Name: e.netPfx + "-fakeproxy", Family: nftables.TableFamilyINet})
	pre := c.AddChain(&nftables.Chain{Name: "services", Table: tb, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	post := c.AddChain(&nftables.Chain{Name: "masquerading", Table: tb, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	addr := func(a netip.Addr, dst bool) []expr.Any {
		off, n := uint32(12), uint32(4)
		if a.Is6() {
			off, n = 8, 16
		}
		if dst {
			off += n
		}
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
		}
	}
	for i, cip := range clusterIPs {
		ep := endpoints[i]
		proto := byte(unix.NFPROTO_IPV4)
		if cip.Is6() {
			proto = unix.NFPROTO_IPV6
		}
		fam := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		}
		dnat := append(append([]expr.Any{}, fam...), addr(cip, true)...)
		dnat = append(dnat,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be.BigEndian.AppendUint16(nil, 80)},
			&expr.Immediate{Register: 1, Data: ep.AsSlice()},
			&expr.Immediate{Register: 2, Data: be.BigEndian.AppendUint16(nil, 8080)},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: uint32(proto), RegAddrMin: 1, RegProtoMin: 2, Specified: true},
		)
		c.AddRule(&nftables.Rule{Table: tb, Chain: pre, Exprs: dnat})
		masq := append(append(append([]expr.Any{}, fam...), addr(ep, false)...), addr(ep, true)...)
		c.AddRule(&nftables.Rule{Table: tb, Chain: post, Exprs: append(masq, &expr.Masq{})})
	}
	if err := c.Flush(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		f, err := os.Open(e.nodePath)
		if err != nil {
			return
		}
		defer f.Close()
		if c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd()))); err == nil {
			c.DelTable(tb)
			c.Flush()
		}
	})
}

// A Service (its DNAT standing in for kube-proxy's) whose endpoint is on
// the client pod's bridge: the endpoint's reply is bridged, and is
// un-DNATed only because nri-podnet turned the bridge's nf_call_iptables
// and nf_call_ip6tables on (the node's bridge-nf-call sysctls are 0
// here); a pod reaches itself through the Service because its bridge port
// is in hairpin mode.
func TestPodnet_ServicesOnTheBridge(t *testing.T) {
	e := newNodeEnv(t, nil)
	_, a4, a6 := e.runPod("a")
	_, _, _ = e.runPod("b")
	a, b := e.podPaths["pod-"+e.netPfx+"-a"], e.podPaths["pod-"+e.netPfx+"-b"]
	cips := []netip.Addr{netip.MustParseAddr("198.19.250.10"), netip.MustParseAddr("fd00:198:18:fa::10")}
	e.fakeProxy(cips, []netip.Addr{a4, a6})
	reachService := func(step, from string, works bool) {
		t.Helper()
		for _, cip := range cips {
			dst := netip.AddrPortFrom(cip, 80)
			if works {
				e.reach(step, from, "tcp", netip.Addr{}, dst, "a")
			} else if got, err := tcpGet(t, from, netip.Addr{}, dst, time.Second); err == nil {
				t.Errorf("%s: %s answered %q; want no answer", step, dst, got)
			}
		}
	}
	reachService("another pod of the bridge", b, true)
	reachService("the endpoint itself", a, true)
	// The bridge's switches, not the node's sysctls, which stay as they
	// were; the change is logged.
	for _, s := range []string{"net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables"} {
		if got := strings.TrimSpace(testutil.Run(t, "ip", "netns", "exec", e.node, "sysctl", "-n", s)); got != "0" {
			t.Errorf("%s = %s in the node's namespace, want 0, as the test set it", s, got)
		}
	}
	if !strings.Contains(e.proc.logs.String(), "bridged pod traffic now passes netfilter") {
		t.Errorf("nri-podnet did not log turning the bridge's netfilter switches on:\n%s", e.proc.logs)
	}

	// Without the bridge's switches the endpoint's reply reaches the
	// client with the endpoint's address, which the client drops.
	br := e.cfg.Bridge
	testutil.Run(t, "ip", "-n", e.node, "link", "set", br, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0")
	reachService("the bridge's nf_call_iptables off", b, false)
	testutil.Run(t, "ip", "-n", e.node, "link", "set", br, "type", "bridge", "nf_call_iptables", "1", "nf_call_ip6tables", "1")
	reachService("the bridge's nf_call_iptables on again", b, true)

	// Without hairpin mode the endpoint's packets to itself, bridged
	// back out of the port they came in on, are dropped.
	veth := podnet.HostVethName("pod-" + e.netPfx + "-a")
	testutil.Run(t, "ip", "-n", e.node, "link", "set", veth, "type", "bridge_slave", "hairpin", "off")
	reachService("hairpin off", a, false)
	testutil.Run(t, "ip", "-n", e.node, "link", "set", veth, "type", "bridge_slave", "hairpin", "on")
	reachService("hairpin on again", a, true)
}

// With noBridgeNetfilter nri-podnet leaves the bridge's switches alone:
// a Service's reply to a pod of the same bridge is then not un-DNATed
// (the node's sysctls are 0 here).
func TestPodnet_NoBridgeNetfilter(t *testing.T) {
	e := newNodeEnv(t, func(c *podnet.Config) { c.NoBridgeNetfilter = true })
	_, a4, a6 := e.runPod("a")
	_, _, _ = e.runPod("b")
	for _, f := range []string{"nf_call_iptables", "nf_call_ip6tables"} {
		if got := e.nodeSysfs("/sys/class/net/" + e.cfg.Bridge + "/bridge/" + f); got != "0" {
			t.Errorf("bridge %s: %s = %s, want 0 (left alone)", e.cfg.Bridge, f, got)
		}
	}
	cip := netip.MustParseAddr("198.19.250.10")
	e.fakeProxy([]netip.Addr{cip, netip.MustParseAddr("fd00:198:18:fa::10")}, []netip.Addr{a4, a6})
	if got, err := tcpGet(t, e.podPaths["pod-"+e.netPfx+"-b"], netip.Addr{}, netip.AddrPortFrom(cip, 80), time.Second); err == nil {
		t.Errorf("the Service answered %q without the bridge's netfilter switches", got)
	}
}
