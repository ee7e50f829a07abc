package kubee2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestAdversarial is the port security suite (make e2e-adversarial;
// docs/security.md): two nodes of nrinetd with the real
// nri-podnet (-kube, NetworkPolicies on) and an outside host, as stage 2
// builds them; a pod with CAP_NET_RAW's means (raw frames out of its
// eth0) attacks the others. Every attack must be dropped at the
// attacker's port, counted for it in nri-podnet's
// nrinet_podnet_portsec_drops_total under its reason, and never reach its
// victim, which a fence (legitimate traffic to the same victim, sent once
// the drop is counted) proves; every legitimate flow beside it works, in
// both families, without policies and with them.
func TestAdversarial(t *testing.T) {
	skipUnlessEnabled(t)
	cp := startControlPlane(t)
	s := newSiege(t, cp)

	t.Run("1-legitimate", func(t *testing.T) { s.legitimate(t) })
	t.Run("2-attacks-without-policies", func(t *testing.T) { s.attacks(t) })
	s.enforcePolicies(t)
	t.Run("3-legitimate-with-policies", func(t *testing.T) { s.legitimate(t) })
	t.Run("4-attacks-with-policies", func(t *testing.T) { s.attacks(t) })
	t.Run("5-hostIP", func(t *testing.T) { s.hostIPs(t) })
	t.Run("5b-localhost", func(t *testing.T) { s.localhost(t) })
	t.Run("6-router-advertisement-taken-by-no-one", func(t *testing.T) { s.noRouterTaken(t) })
	t.Run("7-pathological-policy", func(t *testing.T) { s.pathologicalPolicy(t) })
	t.Run("8-legitimate-after-all", func(t *testing.T) { s.legitimate(t) })
}

// advNS is the namespace of the suite's pods and policies.
const advNS = "adv"

// siege is the suite's cluster: nodes a and b, the outside, and the pods:
// on a the attacker, its victim, the victim's allowed peer and a third pod
// that no policy selects; on b a victim and a peer.
type siege struct {
	cp      *controlPlane
	a, b    *node
	outside *host
	bridgeA net.HardwareAddr // node a's bridge: the pods' gateway
	attacker, victim, peer, third,
	rvictim, rpeer *advPod
	// web is the sandbox ID of the pod with a host port (step 5).
	web string
}

type advPod struct {
	*pod
	node *node
	mac  net.HardwareAddr
	path string // its namespace's path
}

func newSiege(t *testing.T, cp *controlPlane) *siege {
	start := time.Now()
	s := &siege{cp: cp}
	s.outside = newHost(t, cp.u, "nrke-"+cp.token+"-o", "nrke"+cp.token+"o", false)
	s.a = startNodeWith(t, cp, "a", nodeOptions{health: true})
	s.b = startNodeWith(t, cp, "b", nodeOptions{health: true})
	waitNodeRoutes(t, []*node{s.a, s.b})
	s.bridgeA = linkMAC(t, s.a.netns, s.a.bridge)
	mk := func(n *node, name, app string) *advPod {
		p := n.runPodIn(advNS, name, map[string]string{"app": app})
		return &advPod{pod: p, node: n, mac: linkMAC(t, p.netns, "eth0"), path: filepath.Join(netnsDir, p.netns)}
	}
	s.attacker, s.victim = mk(s.a, "attacker", "attacker"), mk(s.a, "victim", "victim")
	s.peer, s.third = mk(s.a, "peer", "peer"), mk(s.a, "third", "third")
	s.rvictim, s.rpeer = mk(s.b, "rvictim", "victim"), mk(s.b, "rpeer", "peer")
	t.Logf("2 nodes, 6 pods in %v", time.Since(start).Round(time.Millisecond))
	return s
}

// linkMAC reads an interface's MAC address in a namespace.
func linkMAC(t testing.TB, netns, link string) net.HardwareAddr {
	t.Helper()
	var v []struct {
		Address string `json:"address"`
	}
	out := run(t, "ip", "-n", netns, "-j", "link", "show", "dev", link)
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v) != 1 {
		t.Fatalf("ip -n %s link show %s: %v\n%s", netns, link, err, out)
	}
	mac, err := net.ParseMAC(v[0].Address)
	if err != nil {
		t.Fatal(err)
	}
	return mac
}

// legitimate checks what must work beside the attacks: pods reach each
// other on one node and across the nodes, and the outside, in both
// families (the attacker, under its policies, is not a sender here).
func (s *siege) legitimate(t *testing.T) {
	for _, c := range []struct {
		from, to *advPod
	}{
		{s.peer, s.victim}, {s.rpeer, s.victim}, {s.peer, s.rvictim}, {s.third, s.peer}, {s.rpeer, s.peer},
	} {
		for _, a := range c.to.ips {
			if err := ping(c.from.netns, a); err != nil {
				t.Errorf("%s → %s (%s): %v", c.from.name, c.to.name, a, err)
			}
		}
	}
	for _, a := range []netip.Addr{s.outside.addr4, s.outside.addr6} {
		if err := ping(s.third.netns, a); err != nil {
			t.Errorf("third → the outside (%s): %v", a, err)
		}
	}
}

// enforcePolicies creates the suite's NetworkPolicies and waits until
// they hold: the victims allow only the two peers (by address: the pods
// of crictl are no API objects), and the attacker may send nothing at
// all (default-deny egress).
func (s *siege) enforcePolicies(t *testing.T) {
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: advNS}}
	if _, err := s.cp.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var peers []networkingv1.NetworkPolicyPeer
	for _, p := range []*advPod{s.peer, s.rpeer} {
		for _, a := range p.ips {
			peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(a, a.BitLen()).String()}})
		}
	}
	for _, pol := range []*networkingv1.NetworkPolicy{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "victim-allows-peers", Namespace: advNS},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: peers}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "attacker-deny-egress", Namespace: advNS},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "attacker"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			},
		},
	} {
		if _, err := s.cp.client.NetworkingV1().NetworkPolicies(advNS).Create(ctx, pol, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the suite's NetworkPolicies enforced", policyTimeout, 100*time.Millisecond, func() (bool, string) {
		for _, c := range []struct{ from, to *advPod }{{s.third, s.victim}, {s.attacker, s.peer}, {s.third, s.rvictim}} {
			if ping(c.from.netns, c.to.ips[0]) == nil {
				return false, c.from.name + " still reaches " + c.to.name
			}
		}
		return true, ""
	})
	// "Why was this denied?": nri-podnet explain asks the running plugin.
	for _, c := range []struct {
		from, to *advPod
		says     string
	}{
		{s.third, s.victim, "denied: egress of " + s.third.addr(true).String() + " not isolated (no policy of this node's pods selects it); ingress of adv/victim: no policy allows it (isolated by adv/victim-allows-peers)"},
		{s.peer, s.victim, "allowed: egress of " + s.peer.addr(true).String() + " not isolated (no policy of this node's pods selects it); ingress of adv/victim allowed by adv/victim-allows-peers"},
		{s.attacker, s.peer, "denied: egress of adv/attacker: no policy allows it (isolated by adv/attacker-deny-egress)"},
	} {
		out := run(t, env.podnet, "explain", "-address", s.a.healthAddr, c.from.addr(true).String(), c.to.addr(true).String(), "5000/udp")
		if !strings.HasPrefix(out, c.says) {
			t.Errorf("nri-podnet explain %s → %s: %q, want it to start %q", c.from.name, c.to.name, out, c.says)
		}
	}
}

// attack is one attack: a frame the attacker sends, the victim that must
// not receive it, the fence that proves it did not, and the counter that
// must count it.
type attack struct {
	name   string
	reason string
	frame  []byte
	// at is where the victim listens: a pod, or the outside (nil).
	at *advPod
	// fence sends legitimate traffic to the victim with the payload.
	fence func(payload string) error
	// seen tells the attack frame from others when its payload has no
	// marker.
	seen func(f []byte) bool
}

func marker(name string) []byte { return []byte("nrinet-adversarial " + name) }

// udpTo sends one UDP datagram from inside pod p to dst:5000.
func udpTo(p *advPod, dst netip.Addr, payload string) error {
	return testutil.InNetNS(p.path, func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(dst, 5000).String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte(payload))
		return err
	})
}

// attacks runs every attack from the attacker.
func (s *siege) attacks(t *testing.T) {
	x, v, rv := s.attacker, s.victim, s.rvictim
	u4 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv4Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	u6 := func(src, dst netip.Addr, name string) []byte {
		return testutil.IPv6Packet(src, dst, 17, testutil.UDP(4000, 5000, marker(name)))
	}
	fenceTo := func(from, to *advPod, v4 bool) func(string) error {
		return func(p string) error { return udpTo(from, to.addr(v4), p) }
	}
	toOutside := func(v4 bool) func(string) error {
		dst := s.outside.addr6
		if v4 {
			dst = s.outside.addr4
		}
		return func(p string) error { return udpTo(s.third, dst, p) }
	}
	// Addresses of node a's pod CIDRs that no pod holds.
	unallocated4, unallocated6 := nthAddr(s.a.podCIDRs[0], 200), nthAddr(s.a.podCIDRs[1], 200)
	ll := func(mac net.HardwareAddr) netip.Addr { // EUI-64 link-local, as the kernel makes it
		var a [16]byte
		a[0], a[1] = 0xfe, 0x80
		a[8], a[9], a[10], a[11], a[12] = mac[0]^2, mac[1], mac[2], 0xff, 0xfe
		a[13], a[14], a[15] = mac[3], mac[4], mac[5]
		return netip.AddrFrom16(a)
	}
	allNodes := net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	attacks := []attack{
		{name: "forged IPv4 source, a peer's, same node", reason: "ipv4-source", at: v, fence: fenceTo(s.peer, v, true),
			frame: testutil.EthFrame(v.mac, x.mac, 0x0800, u4(s.peer.addr(true), v.addr(true), "f4-same"))},
		{name: "forged IPv6 source, a peer's, same node", reason: "ipv6-source", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.EthFrame(v.mac, x.mac, 0x86dd, u6(s.peer.addr(false), v.addr(false), "f6-same"))},
		{name: "forged IPv4 source, a remote peer's, other node", reason: "ipv4-source", at: rv, fence: fenceTo(s.peer, rv, true),
			frame: testutil.EthFrame(s.bridgeA, x.mac, 0x0800, u4(s.rpeer.addr(true), rv.addr(true), "f4-other"))},
		{name: "forged IPv6 source, a remote peer's, other node", reason: "ipv6-source", at: rv, fence: fenceTo(s.peer, rv, false),
			frame: testutil.EthFrame(s.bridgeA, x.mac, 0x86dd, u6(s.rpeer.addr(false), rv.addr(false), "f6-other"))},
		{name: "forged IPv4 source, a pod of the same node, other node", reason: "ipv4-source", at: rv, fence: fenceTo(s.peer, rv, true),
			frame: testutil.EthFrame(s.bridgeA, x.mac, 0x0800, u4(s.peer.addr(true), rv.addr(true), "f4-samenode-other"))},
		{name: "forged IPv4 source, unallocated, outside", reason: "ipv4-source", fence: toOutside(true),
			frame: testutil.EthFrame(s.bridgeA, x.mac, 0x0800, u4(unallocated4, s.outside.addr4, "f4-outside"))},
		{name: "forged IPv6 source, unallocated, outside", reason: "ipv6-source", fence: toOutside(false),
			frame: testutil.EthFrame(s.bridgeA, x.mac, 0x86dd, u6(unallocated6, s.outside.addr6, "f6-outside"))},
		{name: "forged IPv6 source, the target's own", reason: "ipv6-source", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.EthFrame(v.mac, x.mac, 0x86dd, u6(v.addr(false), v.addr(false), "f6-self"))},
		{name: "VLAN ID 0 (priority-tagged)", reason: "vlan", at: v, fence: fenceTo(s.peer, v, true),
			frame: testutil.VLANTagged(testutil.EthFrame(v.mac, x.mac, 0x0800, u4(x.addr(true), v.addr(true), "vlan0")), 0x8100, 0)},
		{name: "VLAN 10", reason: "vlan", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.VLANTagged(testutil.EthFrame(v.mac, x.mac, 0x86dd, u6(x.addr(false), v.addr(false), "vlan10")), 0x8100, 10)},
		{name: "QinQ", reason: "vlan", at: v, fence: fenceTo(s.peer, v, true),
			frame: testutil.VLANTagged(testutil.VLANTagged(testutil.EthFrame(v.mac, x.mac, 0x0800, u4(x.addr(true), v.addr(true), "qinq")), 0x8100, 20), 0x88a8, 30)},
		{name: "another pod's MAC (FDB poisoning)", reason: "mac", at: s.third, fence: fenceTo(s.peer, s.third, true),
			frame: testutil.EthFrame(s.third.mac, v.mac, 0x0800, u4(x.addr(true), s.third.addr(true), "mac"))},
		{name: "gratuitous ARP for a peer's address", reason: "arp", at: v, fence: fenceTo(s.peer, v, true),
			frame: testutil.EthFrame(bcast, x.mac, 0x0806, testutil.ARPPacket(1, x.mac, s.peer.addr(true), make(net.HardwareAddr, 6), s.peer.addr(true))),
			seen: func(f []byte) bool {
				return bytes.Contains(f, append(append([]byte{}, x.mac...), s.peer.addr(true).AsSlice()...))
			}},
		{name: "unsolicited neighbour advertisement for a peer's address", reason: "nd", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.EthFrame(allNodes, x.mac, 0x86dd, testutil.IPv6Packet(ll(x.mac), netip.MustParseAddr("ff02::1"), 58, testutil.NeighborAdvert(s.peer.addr(false), x.mac))),
			seen: func(f []byte) bool {
				return len(f) > 54 && f[54] == 136 && bytes.Contains(f, s.peer.addr(false).AsSlice())
			}},
		{name: "router advertisement", reason: "router", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.EthFrame(allNodes, x.mac, 0x86dd, testutil.IPv6Packet(ll(x.mac), netip.MustParseAddr("ff02::1"), 58, testutil.RouterAdvert(netip.MustParsePrefix("fd00:198:18:7c::/64"), x.mac))),
			seen:  func(f []byte) bool { return len(f) > 54 && f[54] == 134 }},
		{name: "IPv6 redirect", reason: "router", at: v, fence: fenceTo(s.peer, v, false),
			frame: testutil.EthFrame(v.mac, x.mac, 0x86dd, testutil.IPv6Packet(ll(x.mac), ll(v.mac), 58, testutil.Redirect6(ll(x.mac), s.outside.addr6))),
			seen:  func(f []byte) bool { return len(f) > 54 && f[54] == 137 }},
		{name: "IPv4 redirect", reason: "router", at: v, fence: fenceTo(s.peer, v, true),
			frame: testutil.EthFrame(v.mac, x.mac, 0x0800, testutil.IPv4Packet(x.addr(true), v.addr(true), 1, testutil.Redirect4(x.addr(true), u4(v.addr(true), s.outside.addr4, "redirect4"))))},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			ns, iface := s.outside.netnsPath, "eth0"
			if at.at != nil {
				ns = at.at.path
			}
			sn := testutil.Sniff(t, ns, iface)
			before := s.drops(t, s.a, advNS+"/attacker", at.reason)
			if err := testutil.SendFrame(x.path, "eth0", at.frame); err != nil {
				t.Fatal(err)
			}
			// The drop is counted when the bridge has taken the frame:
			// from then on it can never arrive.
			waitFor(t, "the drop counted", 10*time.Second, 50*time.Millisecond, func() (bool, string) {
				n := s.drops(t, s.a, advNS+"/attacker", at.reason)
				return n > before, fmt.Sprintf("%s drops: %v", at.reason, n)
			})
			fence := "fence " + at.name
			for _, f := range sn.Until(t, []byte(fence), func() error { return at.fence(fence) }) {
				if bytes.Contains(f, []byte("nrinet-adversarial")) || (at.seen != nil && at.seen(f)) {
					t.Errorf("the victim got the attack: % x", f)
				}
			}
		})
	}
	// The victim's MAC is learnt on its own port only: the poisoning
	// left nothing.
	fdb := run(t, "bridge", "-n", s.a.netns, "fdb", "show", "br", s.a.bridge)
	for _, l := range strings.Split(fdb, "\n") {
		if strings.HasPrefix(l, v.mac.String()+" dev ") && !strings.HasPrefix(l, v.mac.String()+" dev "+hostVeth(v.id)+" ") {
			t.Errorf("the victim's MAC learnt on another port: %s", l)
		}
	}
}

// hostVeth is the name nri-podnet gives the host end of a pod's veth
// ("nrp" and 12 hex digits of the SHA-256 of its sandbox ID).
func hostVeth(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "nrp" + hex.EncodeToString(sum[:6])
}

// nthAddr is the n-th address of p.
func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Addr()
	for range n {
		a = a.Next()
	}
	return a
}

// drops reads nri-podnet's drop counter of a pod's eth0 and reason on node n.
func (s *siege) drops(t testing.TB, n *node, pod, reason string) float64 {
	t.Helper()
	want := fmt.Sprintf(`nrinet_podnet_portsec_drops_total{interface="eth0",pod=%q,reason=%q} `, pod, reason)
	for _, l := range s.metrics(t, n) {
		if v, ok := strings.CutPrefix(l, want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in nri-podnet's metrics on %s", strings.TrimSpace(want), n.name)
	return 0
}

// metrics reads nri-podnet's /metrics on node n.
func (s *siege) metrics(t testing.TB, n *node) []string {
	t.Helper()
	resp, err := http.Get("http://" + n.healthAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	io.Copy(io.Discard, resp.Body)
	return lines
}

// hostIPs: a pod asking for a host port on another pod's address or a
// remote one does not start, and the error names it, the host IP and the
// port; on its node's address it starts.
func (s *siege) hostIPs(t *testing.T) {
	for i, ip := range []netip.Addr{s.victim.addr(true), s.outside.addr4, s.rvictim.addr(false)} {
		name := "thief" + strconv.Itoa(i)
		_, errOut, err := s.a.runPodPorts(t, advNS, name, 18080, ip)
		if err == nil {
			t.Errorf("%s with hostIP %s started", name, ip)
			continue
		}
		for _, want := range []string{advNS + "/" + name, ip.String(), "18080", "not an address of this node"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s refused with %q, which does not say %q", name, errOut, want)
			}
		}
	}
	// Nothing of the refused pods is left: their sandboxes are gone.
	if out := s.a.must("pods", "--namespace", advNS, "-q", "--name", "thief"); strings.TrimSpace(out) != "" {
		t.Errorf("refused pods left: %s", out)
	}
	if _, errOut, err := s.a.runPodPorts(t, advNS, "web", 18080, s.a.addr4); err != nil {
		t.Errorf("a host port on the node's own address: %v: %s", err, errOut)
	}
	out, errOut, err := s.a.runPodPorts(t, advNS, "web-any", 18081, netip.Addr{})
	if err != nil {
		t.Fatalf("a host port on every address of the node: %v: %s", err, errOut)
	}
	s.web = strings.TrimSpace(out)
}

// localhost: with a host port on the node (the web-any pod's, on every
// address, from step 5),
// nri-podnet turns route_localnet on for its bridge, behind the guard
// against CVE-2020-8558: what a pod sends through the bridge to
// 127.0.0.1, 127.0.0.2 or ::1 (towards the node's services that listen
// on its loopback only) is dropped and counted by the guard, and the
// service sees none of it; the node's own connection to
// 127.0.0.1:HOSTPORT reaches the pod.
func (s *siege) localhost(t *testing.T) {
	if s.web == "" {
		t.Skip("no host port pod (step 5 failed)")
	}
	node := filepath.Join(netnsDir, s.a.netns)
	var svc4 net.PacketConn
	var svc6 net.PacketConn
	if err := testutil.InNetNS(node, func() (err error) {
		if svc4, err = net.ListenPacket("udp4", "127.0.0.1:19999"); err != nil {
			return err
		}
		svc6, err = net.ListenPacket("udp6", "[::1]:19999")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer svc4.Close()
	defer svc6.Close()
	x := s.attacker
	before := s.guardCounts(t)
	for _, dst := range []string{"127.0.0.1", "127.0.0.2"} {
		frame := testutil.EthFrame(s.bridgeA, x.mac, 0x0800, testutil.IPv4Packet(x.addr(true), netip.MustParseAddr(dst), 17, testutil.UDP(4000, 19999, marker("localhost "+dst))))
		if err := testutil.SendFrame(x.path, "eth0", frame); err != nil {
			t.Fatal(err)
		}
	}
	frame := testutil.EthFrame(s.bridgeA, x.mac, 0x86dd, testutil.IPv6Packet(x.addr(false), netip.MustParseAddr("::1"), 17, testutil.UDP(4000, 19999, marker("localhost ::1"))))
	if err := testutil.SendFrame(x.path, "eth0", frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the guard counting the packets to the node's loopback", 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		now := s.guardCounts(t)
		return now[4] >= before[4]+2 && now[6] >= before[6]+1, fmt.Sprintf("guard counters %v, before %v", now, before)
	})
	// Counted at the drop: they can never arrive. Nothing is queued.
	for _, c := range []net.PacketConn{svc4, svc6} {
		c.SetReadDeadline(time.Now())
		if n, from, err := c.ReadFrom(make([]byte, 1500)); err == nil {
			t.Errorf("the node's loopback service got %d bytes from %v", n, from)
		}
	}
	// The node's own 127.0.0.1 reaches the web-any pod's host port.
	web := filepath.Join(netnsDir, "nrinet-"+s.web[:12])
	var l net.Listener
	if err := testutil.InNetNS(web, func() (err error) { l, err = net.Listen("tcp4", ":8080"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	if err := testutil.InNetNS(node, func() error {
		c, err := net.DialTimeout("tcp4", "127.0.0.1:18081", 5*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		t.Errorf("the node's connection to 127.0.0.1:18081: %v", err)
	} else if err := <-accepted; err != nil {
		t.Errorf("the web pod's accept: %v", err)
	}
}

// guardCounts reads the packets the host port table's guard dropped on
// node a, by family (4, 6), with nft.
func (s *siege) guardCounts(t testing.TB) map[int]float64 {
	t.Helper()
	out := run(t, "ip", "netns", "exec", s.a.netns, nftPath(t), "-j", "list", "chain", "inet", "nrinet-podnet-hostport", "guard")
	var v struct {
		Nftables []struct {
			Rule *struct {
				Expr []map[string]json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("nft -j list chain guard: %v\n%s", err, out)
	}
	counts := map[int]float64{}
	for _, e := range v.Nftables {
		if e.Rule == nil {
			continue
		}
		fam, packets := 0, 0.0
		for _, x := range e.Rule.Expr {
			if m, ok := x["match"]; ok {
				switch {
				case bytes.Contains(m, []byte(`"ip6"`)):
					fam = 6
				case bytes.Contains(m, []byte(`"ip"`)):
					fam = 4
				}
			}
			if c, ok := x["counter"]; ok {
				var cv struct{ Packets float64 }
				json.Unmarshal(c, &cv)
				packets = cv.Packets
			}
		}
		if fam != 0 {
			counts[fam] += packets
		}
	}
	return counts
}

// runPodPorts runs a pod with one TCP host port on hostIP (the zero Addr:
// every address of the node) with crictl,
// returning crictl's output and error.
func (n *node) runPodPorts(t testing.TB, ns, name string, port int, hostIP netip.Addr) (string, string, error) {
	t.Helper()
	cfg := map[string]any{
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": ns + "-" + name + "-" + n.cp.token, "attempt": 0},
		"linux":    map[string]any{},
		"port_mappings": []map[string]any{
			{"protocol": 0, "container_port": 8080, "host_port": port},
		},
	}
	if hostIP.IsValid() {
		cfg["port_mappings"].([]map[string]any)[0]["host_ip"] = hostIP.String()
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(n.dir, "pod-"+ns+"-"+name+".json")
	writeFile(t, path, string(b))
	out, errOut, err := n.crictl("runp", path)
	if err == nil {
		n.pods = append(n.pods, &pod{name: name, id: strings.TrimSpace(out), netns: "nrinet-" + strings.TrimSpace(out)[:12]})
	}
	return out, errOut, err
}

// noRouterTaken: after the router advertisements of the attacks, node a
// has no route or address from them (its bridge does not accept them, and
// none passed).
func (s *siege) noRouterTaken(t *testing.T) {
	for _, what := range [][]string{{"-6", "route", "show"}, {"-6", "addr", "show"}} {
		out := run(t, "ip", append([]string{"-n", s.a.netns}, what...)...)
		if strings.Contains(out, "fd00:198:18:7c:") {
			t.Errorf("node a took the attacker's router advertisement: ip %s:\n%s", strings.Join(what, " "), out)
		}
	}
	for _, p := range []*advPod{s.victim, s.third} {
		out := run(t, "ip", "-n", p.netns, "-6", "addr", "show")
		if strings.Contains(out, "fd00:198:18:7c:") {
			t.Errorf("pod %s took the attacker's router advertisement:\n%s", p.name, out)
		}
	}
}

// pathologicalPolicy: the review's policy (an ipBlock with 20,000
// excepts) selecting pods of node a is reported by name as too big and
// allows nothing, its pods stay isolated, and a pod started meanwhile
// starts as fast as one before it.
func (s *siege) pathologicalPolicy(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	s.a.runPodIn(advNS, "before", map[string]string{"app": "other"})
	normal := time.Since(start)
	block := &networkingv1.IPBlock{CIDR: "198.18.0.0/15"}
	for i := range 20000 {
		block.Except = append(block.Except, netip.AddrFrom4([4]byte{198, 18 + byte(i>>15), byte(i >> 7), byte(i<<1) | 1}).String()+"/32")
	}
	huge := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: advNS},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "third"}},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: block}}}},
		},
	}
	if _, err := s.cp.client.NetworkingV1().NetworkPolicies(advNS).Create(ctx, huge, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	start = time.Now()
	s.a.runPodIn(advNS, "meanwhile", map[string]string{"app": "other"})
	meanwhile := time.Since(start)
	want := `nrinet_podnet_netpol_oversized_policy_elements{policy="adv/huge"} `
	waitFor(t, "adv/huge reported as too big", policyTimeout, 100*time.Millisecond, func() (bool, string) {
		for _, l := range s.metrics(t, s.a) {
			if strings.HasPrefix(l, want) {
				return true, l
			}
		}
		return false, "no " + want
	})
	reported := time.Since(created)
	if !strings.Contains(s.a.podnet.log.tail(200), "NetworkPolicy too big to enforce") {
		t.Errorf("nri-podnet logged nothing of adv/huge")
	}
	// Its pod is isolated, allowed nothing: the peer (an address in the
	// ipBlock's CIDR space, not excepted) is not let in.
	waitFor(t, "third isolated by adv/huge", policyTimeout, 100*time.Millisecond, func() (bool, string) {
		return ping(s.peer.netns, s.third.ips[0]) != nil, "peer still reaches third"
	})
	t.Logf("a pod started in %v before the policy, %v while it arrived; reported %v after its creation", normal.Round(time.Millisecond), meanwhile.Round(time.Millisecond), reported.Round(time.Millisecond))
	if err := s.cp.client.NetworkingV1().NetworkPolicies(advNS).Delete(ctx, "huge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
