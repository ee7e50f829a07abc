package portsec_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// The test network: a node namespace with a bridge (netfilter calls on,
// as nri-podnet sets them), and pods on it whose host veths carry the
// guarded prefix, each with an IPv4 and an IPv6 address and its MAC.
type testNet struct {
	t      *testing.T
	node   string // the node namespace
	guard  *portsec.Guard
	pods   map[string]*testPod
	bridge net.HardwareAddr
}

type testPod struct {
	name, netns, veth string
	mac               net.HardwareAddr
	v4, v6, ll        netip.Addr
	ifindex           int // of eth0, in its namespace
}

func (p *testPod) port() portsec.Port {
	return portsec.Port{ID: "id-" + p.name, Pod: "test/" + p.name, Interface: p.veth, MAC: p.mac, Addrs: []netip.Addr{p.v4, p.v6, p.ll}}
}

const prefix = "nrp"

func newTestNet(t *testing.T, names ...string) *testNet {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	tok := randHex(3)
	n := &testNet{t: t, node: "nrps" + tok, pods: map[string]*testPod{}}
	nodePath := testutil.NewNetNS(t, n.node)
	run := func(args ...string) { testutil.Run(t, "ip", append([]string{"-n", n.node}, args...)...) }
	testutil.Run(t, "ip", "netns", "exec", n.node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	n.bridge = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	run("link", "add", "br0", "address", n.bridge.String(), "type", "bridge")
	run("addr", "add", "198.18.79.1/24", "dev", "br0")
	run("addr", "add", "fd00:198:18:79::1/64", "dev", "br0", "nodad")
	run("link", "set", "br0", "up")
	for i, name := range names {
		p := &testPod{name: name, netns: n.node + "-" + name, veth: prefix + randHex(6),
			mac: net.HardwareAddr{0x02, 0x42, 0, 0, 0x79, byte(0x10 + i)},
			v4:  netip.MustParseAddr("198.18.79." + strconv.Itoa(10+i)),
			v6:  netip.MustParseAddr("fd00:198:18:79::" + strconv.Itoa(10+i))}
		p.ll = netip.MustParseAddr("fe80::42:ff:fe00:79" + strconv.FormatInt(int64(0x10+i), 16))
		testutil.NewNetNS(t, p.netns)
		run("link", "add", p.veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns)
		run("link", "set", p.veth, "master", "br0", "group", strconv.FormatUint(uint64(portsec.Group("br0")), 10), "up")
		pr := func(args ...string) { testutil.Run(t, "ip", append([]string{"-n", p.netns}, args...)...) }
		pr("link", "set", "eth0", "address", p.mac.String())
		pr("addr", "add", p.v4.String()+"/24", "dev", "eth0")
		pr("addr", "add", p.v6.String()+"/64", "dev", "eth0", "nodad")
		pr("link", "set", "eth0", "up")
		pr("route", "add", "default", "via", "198.18.79.1")
		pr("-6", "route", "add", "default", "via", "fd00:198:18:79::1")
		if err := testutil.InNetNS(filepath.Join(testutil.NetNSDir, p.netns), func() error {
			itf, err := net.InterfaceByName("eth0")
			if err == nil {
				p.ifindex = itf.Index
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		n.pods[name] = p
	}
	f, err := os.Open(nodePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if n.guard, err = portsec.New("br0", prefix, portsec.WithNetNS(int(f.Fd()))); err != nil {
		t.Fatal(err)
	}
	var ports []portsec.Port
	for _, p := range n.pods {
		ports = append(ports, p.port())
	}
	if skipped, err := n.guard.Sync(ports); err != nil || skipped != nil {
		t.Fatalf("Sync: %v, skipped %v", err, skipped)
	}
	// Until every address answers (the link-local addresses' DAD).
	for _, from := range n.pods {
		for _, to := range n.pods {
			if from != to {
				for _, a := range []string{to.v4.String(), to.v6.String(), to.ll.String() + "%eth0"} {
					testutil.WaitFor(t, from.name+" reaching "+a, 10*time.Second, func() bool { return testutil.Ping(from.netns, a) == nil })
				}
			}
		}
	}
	return n
}

func (n *testNet) sniff(netns, iface string) *testutil.Sniffer {
	return testutil.Sniff(n.t, filepath.Join(testutil.NetNSDir, netns), iface)
}

// send sends a raw frame out of the pod's eth0.
func (n *testNet) send(p *testPod, frame []byte) {
	n.t.Helper()
	if err := testutil.SendFrame(filepath.Join(testutil.NetNSDir, p.netns), "eth0", frame); err != nil {
		n.t.Fatalf("sending from %s: %v", p.name, err)
	}
}

func (n *testNet) drops(p *testPod, r portsec.Reason) uint64 {
	n.t.Helper()
	drops, _, err := n.guard.Drops()
	if err != nil {
		n.t.Fatal(err)
	}
	for _, d := range drops {
		if d.ID == "id-"+p.name && d.Reason == r {
			return d.Packets
		}
	}
	n.t.Fatalf("no counter for %s, %s", p.name, r)
	return 0
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// TestGuard_Attacks: pod a tries what a pod with CAP_NET_RAW can send in
// another's name or past the bridge's netfilter; each frame is dropped at
// a's port, counted for a under its reason, and the victim (pod b, or the
// node for traffic that leaves the bridge) receives nothing of it, while
// a's own traffic, sent right after it as a fence, arrives.
func TestGuard_Attacks(t *testing.T) {
	n := newTestNet(t, "a", "b", "c")
	a, b, c := n.pods["a"], n.pods["b"], n.pods["c"]
	outside4, outside6 := netip.MustParseAddr("198.19.79.2"), netip.MustParseAddr("fd00:198:18:7a::2")
	marker := func(name string) []byte { return []byte("nrinet-portsec attack " + name) }
	udp4 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv4Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	udp6 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv6Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	for _, tc := range []struct {
		name   string
		reason portsec.Reason
		// at is the namespace and interface that must not see it: pod
		// b's eth0, or the node's bridge for what leaves the bridge.
		toNode bool
		frame  func(name string) []byte
		// seen tells the attack frame from others, where its payload
		// has no marker.
		seen func(f []byte) bool
	}{
		{name: "forged IPv4 source, another pod's", reason: portsec.ReasonIPv4,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x0800, udp4(c.v4, b.v4, s)) }},
		{name: "forged IPv4 source, unallocated, to the outside", reason: portsec.ReasonIPv4, toNode: true,
			frame: func(s string) []byte {
				return testutil.EthFrame(n.bridge, a.mac, 0x0800, udp4(netip.MustParseAddr("198.18.79.200"), outside4, s))
			}},
		{name: "forged IPv6 source, another pod's", reason: portsec.ReasonIPv6,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x86dd, udp6(c.v6, b.v6, s)) }},
		{name: "forged IPv6 source, the target's own", reason: portsec.ReasonIPv6,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x86dd, udp6(b.v6, b.v6, s)) }},
		{name: "forged IPv6 source, another pod's link-local", reason: portsec.ReasonIPv6,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x86dd, udp6(c.ll, b.ll, s)) }},
		{name: "forged IPv6 source to the outside", reason: portsec.ReasonIPv6, toNode: true,
			frame: func(s string) []byte {
				return testutil.EthFrame(n.bridge, a.mac, 0x86dd, udp6(netip.MustParseAddr("fd00:198:18:79::200"), outside6, s))
			}},
		{name: "priority-tagged (VLAN ID 0)", reason: portsec.ReasonVLAN,
			frame: func(s string) []byte {
				return testutil.VLANTagged(testutil.EthFrame(b.mac, a.mac, 0x0800, udp4(a.v4, b.v4, s)), 0x8100, 0)
			}},
		{name: "802.1Q VLAN 10", reason: portsec.ReasonVLAN,
			frame: func(s string) []byte {
				return testutil.VLANTagged(testutil.EthFrame(b.mac, a.mac, 0x86dd, udp6(a.v6, b.v6, s)), 0x8100, 10)
			}},
		{name: "QinQ", reason: portsec.ReasonVLAN,
			frame: func(s string) []byte {
				return testutil.VLANTagged(testutil.VLANTagged(testutil.EthFrame(b.mac, a.mac, 0x0800, udp4(a.v4, b.v4, s)), 0x8100, 20), 0x88a8, 30)
			}},
		{name: "another pod's MAC (FDB poisoning)", reason: portsec.ReasonMAC,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, c.mac, 0x0800, udp4(a.v4, b.v4, s)) }},
		{name: "gratuitous ARP for another pod's address", reason: portsec.ReasonARP,
			frame: func(string) []byte {
				return testutil.EthFrame(broadcast, a.mac, 0x0806, testutil.ARPPacket(1, a.mac, c.v4, make(net.HardwareAddr, 6), c.v4))
			},
			seen: func(f []byte) bool { return bytes.Contains(f, append([]byte(a.mac), c.v4.AsSlice()...)) }},
		{name: "ARP reply with another pod's MAC", reason: portsec.ReasonARP,
			frame: func(string) []byte {
				return testutil.EthFrame(b.mac, a.mac, 0x0806, testutil.ARPPacket(2, c.mac, a.v4, b.mac, b.v4))
			},
			seen: func(f []byte) bool { return bytes.Contains(f, append([]byte(c.mac), a.v4.AsSlice()...)) }},
		{name: "unsolicited neighbour advertisement for another pod's address", reason: portsec.ReasonND,
			frame: func(string) []byte {
				return testutil.EthFrame(b.mac, a.mac, 0x86dd, testutil.IPv6Packet(a.ll, b.ll, 58, testutil.NeighborAdvert(c.v6, a.mac)))
			},
			seen: func(f []byte) bool { return len(f) > 62 && f[54] == 136 && bytes.Contains(f, c.v6.AsSlice()) }},
		{name: "router advertisement", reason: portsec.ReasonRouter,
			frame: func(string) []byte {
				return testutil.EthFrame(net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, a.mac, 0x86dd,
					testutil.IPv6Packet(a.ll, netip.MustParseAddr("ff02::1"), 58, testutil.RouterAdvert(netip.MustParsePrefix("fd00:198:18:7b::/64"), a.mac)))
			},
			seen: func(f []byte) bool { return len(f) > 54 && f[54] == 134 }},
		{name: "IPv6 redirect", reason: portsec.ReasonRouter,
			frame: func(string) []byte {
				return testutil.EthFrame(b.mac, a.mac, 0x86dd, testutil.IPv6Packet(a.ll, b.ll, 58, testutil.Redirect6(a.ll, outside6)))
			},
			seen: func(f []byte) bool { return len(f) > 54 && f[54] == 137 }},
		{name: "IPv4 redirect", reason: portsec.ReasonRouter,
			frame: func(s string) []byte {
				return testutil.EthFrame(b.mac, a.mac, 0x0800, testutil.IPv4Packet(a.v4, b.v4, 1, testutil.Redirect4(a.v4, udp4(b.v4, outside4, s))))
			}},
		{name: "another EtherType", reason: portsec.ReasonEtherType,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x88b5, marker(s)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, iface, dstMAC := b.netns, "eth0", b.mac
			fence4 := func(s string) []byte { return udp4(a.v4, b.v4, s) }
			if tc.toNode {
				ns, iface, dstMAC = n.node, "br0", n.bridge
				fence4 = func(s string) []byte { return udp4(a.v4, outside4, s) }
			}
			before := n.drops(a, tc.reason)
			s := n.sniff(ns, iface)
			n.send(a, tc.frame(tc.name))
			fence := "fence " + tc.name
			sendFence := func() error {
				return testutil.SendFrame(filepath.Join(testutil.NetNSDir, a.netns), "eth0", testutil.EthFrame(dstMAC, a.mac, 0x0800, fence4(fence)))
			}
			for _, f := range s.Until(t, []byte(fence), sendFence) {
				if bytes.Contains(f, marker(tc.name)) || (tc.seen != nil && tc.seen(f)) {
					t.Errorf("%s got the attack frame: % x", iface, f)
				}
			}
			if after := n.drops(a, tc.reason); after <= before {
				t.Errorf("a's %s drops: %d, then %d", tc.reason, before, after)
			}
		})
	}
	// a's own traffic still passes, and b's MAC is still learnt on b's
	// port only.
	for _, addr := range []string{b.v4.String(), b.v6.String(), b.ll.String() + "%eth0", "198.18.79.1", "fd00:198:18:79::1"} {
		if err := testutil.Ping(a.netns, addr); err != nil {
			t.Errorf("a → %s after the attacks: %v", addr, err)
		}
	}
	fdb := testutil.Run(t, "bridge", "-n", n.node, "fdb", "show", "br", "br0")
	for _, l := range strings.Split(fdb, "\n") {
		if strings.HasPrefix(l, c.mac.String()) && !strings.Contains(l, " dev "+c.veth+" ") {
			t.Errorf("c's MAC learnt on another port: %s", l)
		}
	}
}

// TestGuard_UnknownPort: a host veth of the guarded prefix without an
// entry (its pod removed, or not yet added) passes nothing, and Add
// opens it again.
func TestGuard_UnknownPort(t *testing.T) {
	n := newTestNet(t, "a", "b")
	a, b := n.pods["a"], n.pods["b"]
	if err := n.guard.Remove("id-a"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Ping(a.netns, b.v4.String()); err == nil {
		t.Errorf("a reached b without an entry")
	}
	if _, unknown, err := n.guard.Drops(); err != nil || unknown == 0 {
		t.Errorf("unknown-port drops: %d, %v", unknown, err)
	}
	if err := n.guard.Add(a.port()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a reaching b again", 5*time.Second, func() bool { return testutil.Ping(a.netns, b.v4.String()) == nil })
	if got := n.guard.Ports(); len(got) != 2 {
		t.Errorf("Ports() = %v", got)
	}
}

func TestGuard_BadPorts(t *testing.T) {
	g, err := portsec.New("br0", prefix)
	if err != nil {
		t.Fatal(err)
	}
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	for _, tc := range []struct {
		name string
		p    portsec.Port
		want string
	}{
		{"no ID", portsec.Port{Interface: "nrp1", MAC: mac}, "without a pod ID"},
		{"long interface", portsec.Port{ID: "x", Interface: "nrp0123456789abcdef", MAC: mac}, "interface name"},
		{"multicast MAC", portsec.Port{ID: "x", Interface: "nrp1", MAC: net.HardwareAddr{1, 0, 0, 0, 0, 1}}, "unicast Ethernet"},
		{"two IPv4", portsec.Port{ID: "x", Pod: "ns/p", Interface: "nrp1", MAC: mac, Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")}}, "ns/p"},
		{"multicast address", portsec.Port{ID: "x", Interface: "nrp1", MAC: mac, Addrs: []netip.Addr{netip.MustParseAddr("ff02::1")}}, "ff02::1"},
		{"other prefix", portsec.Port{ID: "x", Interface: "eth1", MAC: mac}, "lacks the guarded prefix"},
	} {
		err := g.Add(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Add = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := portsec.New("br0", ""); err == nil {
		t.Errorf("New with an empty prefix: no error")
	}
	if _, err := portsec.New("br0", prefix, portsec.WithNetNS(-1)); err == nil || errors.Is(err, nil) {
		t.Errorf("WithNetNS(-1): %v", err)
	}
}

// TestGuard_SyncManyPorts: a node full of pods (a kubelet's 110, and more)
// is written in one transaction: the acknowledgements of its hundreds of
// chains, rules and counters fit the socket's buffer (chaos found 12
// ports overflowing the default).
func TestGuard_SyncManyPorts(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	f, err := os.Open(testutil.NewNetNS(t, "nrpm"+randHex(3)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := portsec.New("br0", prefix, portsec.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	var ports []portsec.Port
	for i := range 250 {
		ports = append(ports, portsec.Port{ID: fmt.Sprint("pod-", i), Interface: fmt.Sprintf("%s%012x", prefix, i),
			MAC: net.HardwareAddr{2, 0, 0, 0, byte(i >> 8), byte(i)},
			Addrs: []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 84, byte(i)}), netip.MustParseAddr(fmt.Sprintf("fd00:198:18:84::%x", i+1)),
				netip.MustParseAddr(fmt.Sprintf("fe80::%x", i+1))}})
	}
	if skipped, err := g.Sync(ports); err != nil || len(skipped) != 0 {
		t.Fatalf("Sync of %d ports: %v, skipped %v", len(ports), err, skipped)
	}
	got, err := g.Read()
	if err != nil || len(got) != len(ports) {
		t.Fatalf("Read: %d ports, %v", len(got), err)
	}
	if drops, _, err := g.Drops(); err != nil || len(drops) != len(ports)*len(portsec.Reasons) {
		t.Errorf("Drops: %d series, %v", len(drops), err)
	}
}

// TestGuard_RemoveAfterTableDeleted: a table deleted behind the Guard's
// back (nft delete table, -uninstall) does not make Remove fail for ever;
// the pods removed are forgotten, and the next Add writes the whole table
// again, with the ports still held.
func TestGuard_RemoveAfterTableDeleted(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	name := "nrpd" + randHex(3)
	f, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := portsec.New("br0", prefix, portsec.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]portsec.Port, 3)
	for i := range ports {
		ports[i] = portsec.Port{ID: fmt.Sprint("pod-", i), Interface: fmt.Sprintf("%s%012x", prefix, i),
			MAC: net.HardwareAddr{2, 0, 0, 0, 0x85, byte(i)}, Addrs: []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 85, byte(10 + i)})}}
	}
	if _, err := g.Sync(ports); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "ip", "netns", "exec", name, "nft", "delete", "table", "bridge", portsec.TableName("br0"))
	if err := g.Remove("pod-0"); err != nil {
		t.Errorf("Remove after the table was deleted: %v", err)
	}
	if got := g.Ports(); strings.Join(got, ",") != "pod-1,pod-2" {
		t.Errorf("Ports() = %v; want pod-1, pod-2", got)
	}
	if err := g.Add(ports[0]); err != nil {
		t.Fatal(err)
	}
	got, err := g.Read()
	if want := []string{ports[0].Interface, ports[1].Interface, ports[2].Interface}; err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("after Add, the table guards %v, %v; want %v", got, err, want)
	}
}
