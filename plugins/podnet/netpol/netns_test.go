package netpol_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// The test network: a node namespace with a bridge (its netfilter calls
// on, as nri-podnet sets them) and forwarding on, pod namespaces on the
// bridge, and an "outside" namespace routed through the node.
type testNet struct {
	t     *testing.T
	token string
	node  string // the node namespace's name
	// pods by name: their namespace and addresses.
	pods map[string]*testPod
	ext  *testPod
	enf  *netpol.Enforcer
	// nodeFD is the node namespace's open file (for more Enforcers).
	nodeFD int
	// program is the last applied.
	program *netpol.Program
}

type testPod struct {
	netns string
	ips   []netip.Addr
}

// The ports the pods serve, TCP and UDP, on all their addresses.
var servedPorts = []int{8080, 9090}

const dialTimeout = 250 * time.Millisecond

func newTestNet(t *testing.T, podNames ...string) *testNet {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	if _, err := os.Stat("/proc/sys/net/bridge"); err != nil {
		t.Skip("no bridge netfilter (br_netfilter) in this kernel")
	}
	n := &testNet{t: t, token: randHex(3), pods: map[string]*testPod{}}
	n.node = "nrnp" + n.token
	nodePath := testutil.NewNetNS(t, n.node)
	run := func(args ...string) { testutil.Run(t, "ip", append([]string{"-n", n.node}, args...)...) }
	testutil.Run(t, "ip", "netns", "exec", n.node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	run("link", "add", "br0", "type", "bridge", "nf_call_iptables", "1", "nf_call_ip6tables", "1")
	run("addr", "add", "198.18.77.1/24", "dev", "br0")
	run("addr", "add", "fd00:198:18:77::1/64", "dev", "br0", "nodad")
	run("link", "set", "br0", "up")
	for i, name := range podNames {
		p := &testPod{netns: n.node + "-" + name}
		testutil.NewNetNS(t, p.netns)
		veth := "v" + name
		run("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns)
		run("link", "set", veth, "master", "br0", "up")
		v4 := netip.MustParseAddr("198.18.77." + strconv.Itoa(10+i))
		v6 := netip.MustParseAddr("fd00:198:18:77::" + strconv.Itoa(10+i))
		p.ips = []netip.Addr{v4, v6}
		pr := func(args ...string) { testutil.Run(t, "ip", append([]string{"-n", p.netns}, args...)...) }
		pr("addr", "add", v4.String()+"/24", "dev", "eth0")
		pr("addr", "add", v6.String()+"/64", "dev", "eth0", "nodad")
		pr("link", "set", "eth0", "up")
		pr("route", "add", "default", "via", "198.18.77.1")
		pr("-6", "route", "add", "default", "via", "fd00:198:18:77::1")
		n.pods[name] = p
		n.serve(p)
	}
	// Outside: routed through the node.
	n.ext = &testPod{netns: n.node + "-ext", ips: []netip.Addr{netip.MustParseAddr("198.19.77.2"), netip.MustParseAddr("fd00:198:18:78::2")}}
	testutil.NewNetNS(t, n.ext.netns)
	run("link", "add", "vext", "type", "veth", "peer", "name", "eth0", "netns", n.ext.netns)
	run("addr", "add", "198.19.77.1/24", "dev", "vext")
	run("addr", "add", "fd00:198:18:78::1/64", "dev", "vext", "nodad")
	run("link", "set", "vext", "up")
	er := func(args ...string) { testutil.Run(t, "ip", append([]string{"-n", n.ext.netns}, args...)...) }
	er("addr", "add", "198.19.77.2/24", "dev", "eth0")
	er("addr", "add", "fd00:198:18:78::2/64", "dev", "eth0", "nodad")
	er("link", "set", "eth0", "up")
	er("route", "add", "default", "via", "198.19.77.1")
	er("-6", "route", "add", "default", "via", "fd00:198:18:78::1")
	n.serve(n.ext)
	// Until every address answers (IPv6 duplicate address detection of
	// the link-local addresses, neighbour discovery): the checks must see
	// the rules, not the network coming up.
	all := []*testPod{n.ext}
	for _, name := range podNames {
		all = append(all, n.pods[name])
	}
	for _, from := range all {
		for _, to := range all {
			for _, ip := range to.ips {
				if from != to {
					testutil.WaitFor(t, from.netns+" reaching "+ip.String(), 5*time.Second, func() bool { return testutil.Ping(from.netns, ip.String()) == nil })
				}
			}
		}
	}

	f, err := os.Open(nodePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	n.nodeFD = int(f.Fd())
	if n.enf, err = netpol.New(netpol.WithNetNS(n.nodeFD)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.enf.Uninstall(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// serve makes the pod answer on servedPorts: TCP (accept, write one
// byte) and UDP (echo), on both families.
func (n *testNet) serve(p *testPod) {
	t := n.t
	var wg sync.WaitGroup
	var closers []io.Closer
	for _, port := range servedPorts {
		for _, ip := range p.ips {
			// One socket per address: a wildcard one would be IPv4 only
			// when the test process's own namespace has no IPv6.
			addr := netip.AddrPortFrom(ip, uint16(port)).String()
			var tl net.Listener
			var ul net.PacketConn
			err := testutil.InNetNS("/var/run/netns/"+p.netns, func() error {
				var err error
				if tl, err = net.Listen("tcp", addr); err != nil {
					return err
				}
				ul, err = net.ListenPacket("udp", addr)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			closers = append(closers, tl, ul)
			wg.Add(2)
			go func() {
				defer wg.Done()
				for {
					c, err := tl.Accept()
					if err != nil {
						return
					}
					c.Write([]byte{1})
					c.Close()
				}
			}()
			go func() {
				defer wg.Done()
				buf := make([]byte, 16)
				for {
					k, addr, err := ul.ReadFrom(buf)
					if err != nil {
						return
					}
					ul.WriteTo(buf[:k], addr)
				}
			}()
		}
	}
	t.Cleanup(func() {
		for _, c := range closers {
			c.Close()
		}
		wg.Wait()
	})
}

// reach reports whether from reaches to's address on port over proto
// ("tcp" or "udp").
func (n *testNet) reach(from *testPod, to netip.Addr, proto string, port int) bool {
	ok := false
	err := testutil.InNetNS("/var/run/netns/"+from.netns, func() error {
		c, err := net.DialTimeout(proto, netip.AddrPortFrom(to, uint16(port)).String(), dialTimeout)
		if err != nil {
			return nil
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(dialTimeout))
		if proto == "udp" {
			if _, err := c.Write([]byte{7}); err != nil {
				return nil
			}
		}
		b := make([]byte, 1)
		if _, err := c.Read(b); err == nil {
			ok = true
		}
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return ok
}

// apply compiles and applies the policies over the pods.
func (n *testNet) apply(policies []*networkingv1.NetworkPolicy, namespaces []netpol.Namespace, pods []netpol.Pod) {
	n.t.Helper()
	p, err := netpol.Compile(policies, namespaces, pods)
	if err != nil {
		n.t.Fatal(err)
	}
	if _, err := n.enf.Sync(p); err != nil {
		n.t.Fatal(err)
	}
	n.program = p
}

// expect checks each flow, both families.
type flow struct {
	from, to string // pod names; "ext" for outside
	proto    string
	port     int
	want     bool
}

func (n *testNet) pod(name string) *testPod {
	if name == "ext" {
		return n.ext
	}
	return n.pods[name]
}

func (n *testNet) expect(t *testing.T, flows []flow) {
	t.Helper()
	for _, f := range flows {
		for i, ip := range n.pod(f.to).ips {
			if got := n.reach(n.pod(f.from), ip, f.proto, f.port); got != f.want {
				t.Errorf("%s -> %s %s/%d: reached %v, want %v", f.from, ip, f.proto, f.port, got, f.want)
			}
			// What Program.Explain says of the flow is what the
			// kernel did.
			proto := netpol.TCP
			if f.proto == "udp" {
				proto = netpol.UDP
			}
			e := n.program.Explain(netpol.Flow{Src: n.pod(f.from).ips[i], Dst: ip, Protocol: proto, Port: uint16(f.port)})
			if e.Allowed() != f.want {
				t.Errorf("Explain(%s -> %s %s/%d) = %s; the kernel: reached %v", f.from, ip, f.proto, f.port, e, f.want)
			}
		}
	}
}

func tcpPort(p int) networkingv1.NetworkPolicyPort {
	proto := corev1.ProtocolTCP
	port := intstr.FromInt32(int32(p))
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
}

func policy(ns, name string, sel map[string]string, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: sel},
			PolicyTypes: types, Ingress: in, Egress: eg,
		},
	}
}

// TestEnforcer_Traffic runs real TCP and UDP traffic, IPv4 and IPv6,
// between pods of a bridge and from outside, under policies of each
// selector kind and port form.
func TestEnforcer_Traffic(t *testing.T) {
	n := newTestNet(t, "a", "b", "c")
	namespaces := []netpol.Namespace{{Name: "prod", Labels: map[string]string{"team": "prod"}}, {Name: "dev", Labels: map[string]string{"team": "dev"}}}
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: n.pods["a"].ips, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: n.pods["b"].ips, Local: true,
			Ports: []netpol.NamedPort{{Name: "http", Protocol: netpol.TCP, Port: 8080}}},
		{Namespace: "dev", Name: "c", Labels: map[string]string{"app": "a"}, IPs: n.pods["c"].ips, Local: true},
	}
	udp := corev1.ProtocolUDP
	named := intstr.FromString("http")
	end := int32(9100)
	from := func(peers ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer { return peers }
	podSel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}

	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		flows    []flow
	}{
		{"no policy: everything", nil, []flow{
			{"a", "b", "tcp", 8080, true}, {"c", "b", "tcp", 9090, true}, {"ext", "b", "tcp", 8080, true}, {"b", "ext", "udp", 8080, true},
		}},
		{"podSelector, TCP port by number", []*networkingv1.NetworkPolicy{policy("prod", "b-from-a", map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: from(networkingv1.NetworkPolicyPeer{PodSelector: podSel("app", "a")}), Ports: []networkingv1.NetworkPolicyPort{tcpPort(8080)}}}, nil)},
			[]flow{
				{"a", "b", "tcp", 8080, true}, {"a", "b", "tcp", 9090, false}, {"a", "b", "udp", 8080, false},
				{"c", "b", "tcp", 8080, false}, // app=a, but in dev
				{"ext", "b", "tcp", 8080, false},
				{"b", "a", "tcp", 8080, true}, // a is not selected
			}},
		{"namespaceSelector", []*networkingv1.NetworkPolicy{policy("prod", "b-from-dev", map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: podSel("team", "dev")})}}, nil)},
			[]flow{{"c", "b", "tcp", 9090, true}, {"c", "b", "udp", 8080, true}, {"a", "b", "tcp", 8080, false}}},
		{"namespaceSelector and podSelector together", []*networkingv1.NetworkPolicy{policy("prod", "b-from-dev-a", map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: podSel("team", "dev"), PodSelector: podSel("app", "x")})}}, nil)},
			[]flow{{"c", "b", "tcp", 8080, false}, {"a", "b", "tcp", 8080, false}}},
		{"ipBlock with except", []*networkingv1.NetworkPolicy{policy("prod", "b-from-outside", map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: from(
				networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "198.19.0.0/16", Except: []string{"198.19.77.0/30"}}},
				networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "fd00:198:18:78::/64"}},
			)}}, nil)},
			nil}, // checked per family below
		{"named port, endPort, UDP", []*networkingv1.NetworkPolicy{policy("prod", "b-ports", map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}},
				{From: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: podSel("team", "dev")}), Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: ptrInt(9000), EndPort: &end}}},
			}, nil)},
			[]flow{
				{"a", "b", "tcp", 8080, true}, {"ext", "b", "tcp", 8080, true}, {"a", "b", "tcp", 9090, false},
				{"c", "b", "udp", 8080, false}, // 8080 is below the range
				{"c", "b", "udp", 9090, true},
				{"a", "b", "udp", 9090, false}, // a is not in dev
			}},
		{"default deny ingress", []*networkingv1.NetworkPolicy{policy("prod", "deny", nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, nil, nil)},
			[]flow{{"a", "b", "tcp", 8080, false}, {"b", "a", "udp", 9090, false}, {"c", "b", "tcp", 8080, false}, {"a", "c", "tcp", 8080, true}, {"b", "ext", "tcp", 8080, true}}},
		{"egress to a pod on a named port, else denied", []*networkingv1.NetworkPolicy{policy("dev", "c-out", map[string]string{"app": "a"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil,
			[]networkingv1.NetworkPolicyEgressRule{{To: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: podSel("app", "b")}), Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}})},
			[]flow{{"c", "b", "tcp", 8080, true}, {"c", "b", "tcp", 9090, false}, {"c", "a", "tcp", 8080, false}, {"c", "ext", "tcp", 8080, false}, {"a", "c", "tcp", 8080, true}}},
		{"egress to an ipBlock", []*networkingv1.NetworkPolicy{policy("prod", "a-out", map[string]string{"app": "a"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil,
			[]networkingv1.NetworkPolicyEgressRule{{To: from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "198.19.77.0/24"}}, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "fd00:198:18:78::/64"}})}})},
			[]flow{{"a", "ext", "tcp", 9090, true}, {"a", "ext", "udp", 8080, true}, {"a", "b", "tcp", 8080, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.apply(tc.policies, namespaces, pods)
			n.expect(t, tc.flows)
			if tc.name == "ipBlock with except" {
				// 198.19.77.2 is in the except; its IPv6 address is allowed.
				if n.reach(n.ext, n.pods["b"].ips[0], "tcp", 8080) {
					t.Errorf("ext (198.19.77.2, excepted) reached b over IPv4")
				}
				if !n.reach(n.ext, n.pods["b"].ips[1], "tcp", 8080) {
					t.Errorf("ext (fd00:198:18:78::2, in the block) did not reach b over IPv6")
				}
				if n.reach(n.pods["a"], n.pods["b"].ips[0], "tcp", 8080) {
					t.Errorf("a reached b: not in the block")
				}
			}
		})
	}
}

func ptrInt(p int32) *intstr.IntOrString {
	v := intstr.FromInt32(p)
	return &v
}

// TestEnforcer_NoWindow: while the rules are replaced again and again,
// with c denied in every version, c's connection attempts to b never get
// through, and a's (allowed in every version) always do.
func TestEnforcer_NoWindow(t *testing.T) {
	n := newTestNet(t, "a", "b", "c")
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: n.pods["a"].ips, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: n.pods["b"].ips, Local: true},
		{Namespace: "prod", Name: "c", Labels: map[string]string{"app": "c"}, IPs: n.pods["c"].ips, Local: true},
	}
	version := func(i int) []*networkingv1.NetworkPolicy {
		// Each version allows a from a different set of ports, always
		// including 8080, and never c.
		ports := []networkingv1.NetworkPolicyPort{tcpPort(8080)}
		for k := range i % 5 {
			ports = append(ports, tcpPort(10000+i*10+k))
		}
		return []*networkingv1.NetworkPolicy{policy("prod", "b-v"+strconv.Itoa(i), map[string]string{"app": "b"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}, Ports: ports}}, nil)}
	}
	n.apply(version(0), nil, pods)
	var leaked, attempts atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range 8 {
		ip := n.pods["b"].ips[k%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				attempts.Add(1)
				if n.reachQuick(n.pods["c"], ip) {
					leaked.Add(1)
				}
			}
		}()
	}
	const versions = 200
	start := time.Now()
	for i := 1; i <= versions; i++ {
		n.apply(version(i), nil, pods)
		if i%50 == 0 && !n.reach(n.pods["a"], n.pods["b"].ips[0], "tcp", 8080) {
			t.Errorf("a could not reach b at version %d", i)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d rule replacements in %v; %d connection attempts from c, %d got through", versions, time.Since(start).Round(time.Millisecond), attempts.Load(), leaked.Load())
	if leaked.Load() != 0 {
		t.Errorf("%d of c's connections to b got through while the rules were replaced", leaked.Load())
	}
}

// reachQuick tries one TCP connection to port 8080 with a short timeout.
func (n *testNet) reachQuick(from *testPod, to netip.Addr) bool {
	ok := false
	err := testutil.InNetNS("/var/run/netns/"+from.netns, func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(to, 8080).String(), 50*time.Millisecond)
		if err == nil {
			ok = true
			c.Close()
		} else if !errors.Is(err, os.ErrDeadlineExceeded) && !isTimeout(err) {
			return nil
		}
		return nil
	})
	if err != nil {
		n.t.Error(err)
	}
	return ok
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
