package multinet_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// guardedNetworks are the port security tests' networks: a bridge
// network of both families, an IPv4-only one, and a macvlan network whose
// master is missing, so that an attach that asks for it fails after its
// bridge interfaces are made.
var guardedNetworks = []multinet.Network{
	{Name: "green", Kind: multinet.KindBridge, Bridge: "mnsbr0", Subnets: []string{"198.18.13.0/24", "fd00:198:18:13::/64"}},
	{Name: "four", Kind: multinet.KindBridge, Bridge: "mnsbr1", Subnets: []string{"198.18.14.0/24"}},
	{Name: "ghost", Kind: multinet.KindMacvlan, Master: "nomaster0", Subnets: []string{"198.18.15.0/24"}},
}

// guarded reads the interfaces bridge's table in the host namespace has
// a chain for (nil without a table), with a Guard of the test's own.
func (e *env) guarded(bridge string) []string {
	e.t.Helper()
	f, err := os.Open(filepath.Join(testutil.NetNSDir, e.host))
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	g, err := portsec.New(bridge, multinet.HostVethPrefix, portsec.WithNetNS(int(f.Fd())))
	if err != nil {
		e.t.Fatal(err)
	}
	ports, err := g.Read()
	if err != nil {
		e.t.Fatal(err)
	}
	return ports
}

// hasTable reports whether the host namespace has bridge's table.
func (e *env) hasTable(bridge string) bool {
	e.t.Helper()
	out := testutil.Run(e.t, "ip", "netns", "exec", e.host, "nft", "list", "tables", "bridge")
	return slices.Contains(strings.Fields(out), portsec.TableName(bridge))
}

// hostEnds are the host ends of owners' net1 (net, for another name),
// sorted.
func hostEnds(ifName string, owners ...string) []string {
	var out []string
	for _, o := range owners {
		out = append(out, multinet.HostVethName(o, ifName))
	}
	slices.Sort(out)
	return out
}

// guardedPod is a pod with one interface, net1, on network green.
type guardedPod struct {
	owner, ns string
	mac       net.HardwareAddr
	v4, v6    netip.Addr
	ll        netip.Addr // net1's link-local address, as the kernel made it
}

func (e *env) guardedPod(n int, owner string) *guardedPod {
	e.t.Helper()
	ns, path := e.pod(n)
	itfs, err := e.m.Attach(context.Background(), owner, multinet.Pod{Namespace: "ns", Name: owner}, path, []multinet.Request{{Claim: "ns/" + owner, Network: "green", IfName: "net1"}})
	if err != nil {
		e.t.Fatal(err)
	}
	p := &guardedPod{owner: owner, ns: ns, mac: itfs[0].HardwareAddr()}
	for _, a := range itfs[0].Addrs {
		if a.Addr().Is4() {
			p.v4 = a.Addr()
		} else {
			p.v6 = a.Addr()
		}
	}
	out := testutil.Run(e.t, "ip", "-n", ns, "-6", "-o", "addr", "show", "dev", "net1", "scope", "link")
	f := strings.Fields(out)
	if i := slices.Index(f, "inet6"); i >= 0 && i+1 < len(f) {
		p.ll = netip.MustParsePrefix(f[i+1]).Addr()
	}
	if want := portsec.LinkLocal(p.mac); p.ll != want {
		e.t.Fatalf("%s's net1 has link-local %v; want %s (EUI-64 of %s)", owner, p.ll, want, p.mac)
	}
	return p
}

// drops is owner's net1's count of frames dropped for r, under its pod
// (ns/<owner>).
func (e *env) drops(owner string, r portsec.Reason) uint64 {
	e.t.Helper()
	drops, _, err := e.m.PortDrops()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range drops {
		if d.Pod == "ns/"+owner && d.Interface == "net1" && d.Reason == r {
			return d.Packets
		}
	}
	e.t.Fatalf("no %s counter for %s/net1 in %+v", r, owner, drops)
	return 0
}

// TestManager_portSecurity_attacks: pod a, on a secondary bridge network,
// sends from its net1 what a pod with CAP_NET_RAW can send in another's
// name; each frame is dropped at a's host end and counted under a's
// net1 and its reason, and pod b's net1 receives nothing of it, while
// a's own traffic (the fence sent right after) arrives, and the pods
// reach each other over net1 in both families, before and after.
func TestManager_portSecurity_attacks(t *testing.T) {
	e := newEnvWith(t, guardedNetworks)
	a, b, c := e.guardedPod(1, "pod-a"), e.guardedPod(2, "pod-b"), e.guardedPod(3, "pod-c")
	if got, want := e.guarded("mnsbr0"), hostEnds("net1", "pod-a", "pod-b", "pod-c"); !slices.Equal(got, want) {
		t.Fatalf("guarded ports %v; want %v", got, want)
	}
	group := strconv.FormatUint(uint64(portsec.Group("mnsbr0")), 10)
	for _, end := range hostEnds("net1", "pod-a", "pod-b", "pod-c") {
		if f := strings.Fields(testutil.Run(t, "ip", "-n", e.host, "-o", "link", "show", "dev", end)); !slices.Contains(f, group) {
			t.Errorf("host end %s is not in group %s: %v", end, group, f)
		}
	}
	reach := func(when string) {
		t.Helper()
		for _, from := range []*guardedPod{a, b} {
			to := a
			if from == a {
				to = b
			}
			for _, addr := range []string{to.v4.String(), to.v6.String(), to.ll.String() + "%net1"} {
				testutil.WaitFor(t, when+": "+from.owner+" reaching "+addr, 10*time.Second, func() bool { return testutil.Ping(from.ns, addr) == nil })
			}
		}
	}
	reach("before the attacks")

	marker := func(name string) []byte { return []byte("nrinet-multinet-portsec " + name) }
	udp4 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv4Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	udp6 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv6Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	broadcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	allNodes := net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
	for _, tc := range []struct {
		name   string
		reason portsec.Reason
		frame  func(name string) []byte
		seen   func(f []byte) bool // the attack frame, where its payload has no marker
	}{
		{name: "forged IPv4 source", reason: portsec.ReasonIPv4,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x0800, udp4(c.v4, b.v4, s)) }},
		{name: "forged IPv6 source", reason: portsec.ReasonIPv6,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, a.mac, 0x86dd, udp6(c.v6, b.v6, s)) }},
		{name: "forged MAC", reason: portsec.ReasonMAC,
			frame: func(s string) []byte { return testutil.EthFrame(b.mac, c.mac, 0x0800, udp4(a.v4, b.v4, s)) }},
		{name: "gratuitous ARP for another pod's address", reason: portsec.ReasonARP,
			frame: func(string) []byte {
				return testutil.EthFrame(broadcast, a.mac, 0x0806, testutil.ARPPacket(1, a.mac, c.v4, make(net.HardwareAddr, 6), c.v4))
			},
			seen: func(f []byte) bool { return bytes.Contains(f, append([]byte(a.mac), c.v4.AsSlice()...)) }},
		{name: "unsolicited neighbour advertisement for another pod's address", reason: portsec.ReasonND,
			frame: func(string) []byte {
				return testutil.EthFrame(b.mac, a.mac, 0x86dd, testutil.IPv6Packet(a.ll, b.ll, 58, testutil.NeighborAdvert(c.v6, a.mac)))
			},
			seen: func(f []byte) bool { return len(f) > 62 && f[54] == 136 && bytes.Contains(f, c.v6.AsSlice()) }},
		{name: "router advertisement", reason: portsec.ReasonRouter,
			frame: func(string) []byte {
				return testutil.EthFrame(allNodes, a.mac, 0x86dd,
					testutil.IPv6Packet(a.ll, netip.MustParseAddr("ff02::1"), 58, testutil.RouterAdvert(netip.MustParsePrefix("fd00:198:18:1d::/64"), a.mac)))
			},
			seen: func(f []byte) bool { return len(f) > 54 && f[54] == 134 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.drops(a.owner, tc.reason)
			s := testutil.Sniff(t, filepath.Join(testutil.NetNSDir, b.ns), "net1")
			if err := testutil.SendFrame(filepath.Join(testutil.NetNSDir, a.ns), "net1", tc.frame(tc.name)); err != nil {
				t.Fatal(err)
			}
			fence := []byte("fence " + tc.name)
			sendFence := func() error {
				return testutil.SendFrame(filepath.Join(testutil.NetNSDir, a.ns), "net1", testutil.EthFrame(b.mac, a.mac, 0x0800, udp4(a.v4, b.v4, string(fence))))
			}
			for _, f := range s.Until(t, fence, sendFence) {
				if bytes.Contains(f, marker(tc.name)) || (tc.seen != nil && tc.seen(f)) {
					t.Errorf("b's net1 got the attack frame: % x", f)
				}
			}
			if after := e.drops(a.owner, tc.reason); after <= before {
				t.Errorf("a's %s drops: %d, then %d", tc.reason, before, after)
			}
		})
	}
	// b took no route or address from the router advertisement.
	if out := testutil.Run(t, "ip", "-n", b.ns, "-6", "addr", "show", "dev", "net1"); strings.Contains(out, "fd00:198:18:1d:") {
		t.Errorf("b took an address from the advertisement:\n%s", out)
	}
	reach("after the attacks")
	ctx := context.Background()
	for _, p := range []*guardedPod{a, b, c} {
		if err := e.m.Detach(ctx, p.owner, ""); err != nil {
			t.Fatal(err)
		}
	}
	if e.hasTable("mnsbr0") {
		t.Errorf("table %s left after the last detach", portsec.TableName("mnsbr0"))
	}
}

// TestManager_portSecurity_ports: the bridges' tables hold exactly the
// live interfaces after Attach, a failed Attach (undone), Detach, a new
// manager (a restart: New restores a table lost meanwhile, an Attach
// before Sync keeps the live ports) and its Sync; Uninstall removes them.
func TestManager_portSecurity_ports(t *testing.T) {
	e := newEnvWith(t, guardedNetworks)
	ctx := context.Background()
	attach := func(n int, owner string, reqs ...multinet.Request) error {
		_, path := e.pod(n)
		_, err := e.m.Attach(ctx, owner, multinet.Pod{}, path, reqs)
		return err
	}
	green := func(owner string) multinet.Request {
		return multinet.Request{Claim: "ns/" + owner, Network: "green", IfName: "net1"}
	}
	want := func(when string, bridge string, ends []string) {
		t.Helper()
		if got := e.guarded(bridge); !slices.Equal(got, ends) {
			t.Errorf("%s: %s guards %v; want %v", when, bridge, got, ends)
		}
	}
	if err := attach(1, "pod-a", green("pod-a"), multinet.Request{Claim: "ns/pod-a", Network: "four", IfName: "net2"}); err != nil {
		t.Fatal(err)
	}
	if err := attach(2, "pod-b", green("pod-b")); err != nil {
		t.Fatal(err)
	}
	want("attached", "mnsbr0", hostEnds("net1", "pod-a", "pod-b"))
	want("attached", "mnsbr1", hostEnds("net2", "pod-a"))
	// IPv4 only: no link-local address on net2 either.
	if out := testutil.Run(t, "ip", "-n", "mnt-p1-"+e.tag, "-6", "-o", "addr", "show", "dev", "net2"); strings.TrimSpace(out) != "" {
		t.Errorf("IPv4-only net2 has IPv6 addresses: %s", out)
	}

	// net1 is made and guarded, then net2's missing master fails it.
	err := attach(3, "pod-c", green("pod-c"), multinet.Request{Claim: "ns/pod-c", Network: "ghost", IfName: "net2"})
	if !strings.Contains(fmtErr(err), `master "nomaster0"`) {
		t.Fatalf("Attach with a missing master: %v", err)
	}
	want("failed attach undone", "mnsbr0", hostEnds("net1", "pod-a", "pod-b"))
	drops, _, err := e.m.PortDrops()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drops {
		if d.Pod == "pod-c" { // the owner: green's requests name no pod
			t.Errorf("failed attach left a counter: %+v", d)
		}
	}

	if err := e.m.Detach(ctx, "pod-b", ""); err != nil {
		t.Fatal(err)
	}
	want("pod-b detached", "mnsbr0", hostEnds("net1", "pod-a"))
	if err := attach(4, "pod-d", green("pod-d")); err != nil {
		t.Fatal(err)
	}

	// A restart: the tables stay while no manager runs; one lost
	// meanwhile comes back with the new manager.
	e.m.Close()
	want("closed", "mnsbr0", hostEnds("net1", "pod-a", "pod-d"))
	testutil.Run(t, "ip", "netns", "exec", e.host, "nft", "delete", "table", "bridge", portsec.TableName("mnsbr0"))
	e.open()
	want("reopened", "mnsbr0", hostEnds("net1", "pod-a", "pod-d"))
	want("reopened", "mnsbr1", hostEnds("net2", "pod-a"))
	if err := attach(5, "pod-e", green("pod-e")); err != nil {
		t.Fatal(err)
	}
	want("attached before Sync", "mnsbr0", hostEnds("net1", "pod-a", "pod-d", "pod-e"))
	gone, err := e.m.Sync(ctx, func(owner string) bool { return owner == "pod-a" || owner == "pod-e" })
	if err != nil || !slices.Equal(gone, []string{"pod-d"}) {
		t.Fatalf("Sync detached %v, %v; want [pod-d]", gone, err)
	}
	want("synced", "mnsbr0", hostEnds("net1", "pod-a", "pod-e"))

	if err := multinet.Uninstall(e.cfg, multinet.WithHostNetNS(filepath.Join(testutil.NetNSDir, e.host))); err != nil {
		t.Fatal(err)
	}
	for _, br := range []string{"mnsbr0", "mnsbr1"} {
		if e.hasTable(br) {
			t.Errorf("Uninstall left table %s", portsec.TableName(br))
		}
	}
	for _, o := range []string{"pod-a", "pod-e"} {
		if err := e.m.Detach(ctx, o, ""); err != nil {
			t.Fatal(err)
		}
		e.clean(o, "", false)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	var re *multinet.RequestError
	if !errors.As(err, &re) {
		return "not a *RequestError: " + err.Error()
	}
	return err.Error()
}

func TestConfig_Validate_bridgeSubnetsPerFamily(t *testing.T) {
	_, err := multinet.FromBytes([]byte(`{"stateDir":"/x","networks":[{"name":"a","kind":"bridge","bridge":"b","subnets":["198.18.0.0/24","198.18.1.0/24"]}]}`))
	if err == nil || !strings.Contains(err.Error(), `network "a": subnets ["198.18.0.0/24" "198.18.1.0/24"]: a bridge network has at most one IPv4 and one IPv6 subnet`) {
		t.Errorf("two IPv4 subnets on a bridge network: %v", err)
	}
	if _, err := multinet.FromBytes([]byte(`{"stateDir":"/x","networks":[{"name":"a","kind":"macvlan","master":"m","subnets":["198.18.0.0/24","198.18.1.0/24"]}]}`)); err != nil {
		t.Errorf("two IPv4 subnets on a macvlan network: %v", err)
	}
}
