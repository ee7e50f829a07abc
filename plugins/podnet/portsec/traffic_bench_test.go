package portsec_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// trafficRoundsEnv sets how many rounds BenchmarkTraffic runs: each round
// runs every configuration once, in turn (the order alternating from
// round to round), so that the configurations' samples interleave.
const trafficRoundsEnv = "NRINET_TRAFFIC_ROUNDS"

// The benchmark's traffic: pod a dials pod b's ports.
const (
	streamPort = 5201 // one stream: a writes, b reads and acknowledges each chunk
	connPort   = 5202 // a connection per op: request, reply, close
	// streamChunk is what a writes per op of load=stream; b answers one
	// byte for each.
	streamChunk = 4 << 20
	// messageSize is the request and the reply of load=conns.
	messageSize = 64
	// opTimeout bounds every op (and the server's every read).
	opTimeout = 10 * time.Second
)

// trafficPod is a pod of the benchmark's node: a namespace with eth0 on
// the node's bridge, through a host veth with the guarded prefix in the
// bridge's interface group.
type trafficPod struct {
	name, netns, veth string
	mac               net.HardwareAddr
	v4, v6, ll        netip.Addr
}

func (p *trafficPod) path() string { return filepath.Join(testutil.NetNSDir, p.netns) }

func (p *trafficPod) port() portsec.Port {
	return portsec.Port{ID: "id-" + p.name, Pod: "bench/" + p.name, Interface: p.veth, MAC: p.mac, Addrs: []netip.Addr{p.v4, p.v6, p.ll}}
}

// trafficNet is the benchmark's node: a namespace with bridge br0
// (198.18.83.1/24, fd00:198:18:83::1/64, its netfilter calls on as
// nri-podnet sets them), and pods a (client, .10) and b (server, .11).
type trafficNet struct {
	node   string
	nodeFD int
	a, b   *trafficPod
	guard  *portsec.Guard
	// program is the NetworkPolicy program in force with the rules.
	program *netpol.Program
}

func newTrafficNet(b *testing.B) *trafficNet {
	b.Helper()
	testutil.SkipUnlessRoot(b)
	if _, err := os.Stat("/proc/sys/net/bridge"); err != nil {
		b.Skip("no bridge netfilter (br_netfilter) in this kernel")
	}
	n := &trafficNet{node: "nrpt" + randHex(3)}
	nodePath := testutil.NewNetNS(b, n.node)
	run := func(args ...string) { testutil.Run(b, "ip", append([]string{"-n", n.node}, args...)...) }
	testutil.Run(b, "ip", "netns", "exec", n.node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	run("link", "add", "br0", "type", "bridge", "nf_call_iptables", "1", "nf_call_ip6tables", "1")
	b.Cleanup(func() { exec.Command("ip", "-n", n.node, "link", "del", "dev", "br0").Run() })
	run("addr", "add", "198.18.83.1/24", "dev", "br0")
	run("addr", "add", "fd00:198:18:83::1/64", "dev", "br0", "nodad")
	run("link", "set", "br0", "up")
	group := strconv.FormatUint(uint64(portsec.Group("br0")), 10)
	pods := make([]*trafficPod, 2)
	for i, name := range []string{"a", "b"} {
		last := byte(0x10 + i)
		p := &trafficPod{name: name, netns: n.node + "-" + name, veth: prefix + randHex(6),
			mac: net.HardwareAddr{0x02, 0x42, 0, 0, 0x83, last},
			v4:  netip.MustParseAddr("198.18.83." + strconv.Itoa(10+i)),
			v6:  netip.MustParseAddr("fd00:198:18:83::" + strconv.Itoa(10+i)),
			// The kernel's EUI-64 link-local address of the MAC.
			ll: netip.MustParseAddr(fmt.Sprintf("fe80::42:ff:fe00:83%02x", last))}
		testutil.NewNetNS(b, p.netns)
		run("link", "add", p.veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns)
		b.Cleanup(func() { exec.Command("ip", "-n", n.node, "link", "del", "dev", p.veth).Run() })
		run("link", "set", p.veth, "master", "br0", "group", group, "up")
		pr := func(args ...string) { testutil.Run(b, "ip", append([]string{"-n", p.netns}, args...)...) }
		pr("link", "set", "eth0", "address", p.mac.String())
		pr("addr", "add", p.v4.String()+"/24", "dev", "eth0")
		pr("addr", "add", p.v6.String()+"/64", "dev", "eth0", "nodad")
		pr("link", "set", "eth0", "up")
		pr("route", "add", "default", "via", "198.18.83.1")
		pr("-6", "route", "add", "default", "via", "fd00:198:18:83::1")
		pods[i] = p
	}
	n.a, n.b = pods[0], pods[1]
	// Until both pods reach each other on every address (neighbour
	// discovery, the link-local addresses' DAD), with no rules yet.
	for _, c := range [][2]*trafficPod{{n.a, n.b}, {n.b, n.a}} {
		for _, addr := range []string{c[1].v4.String(), c[1].v6.String(), c[1].ll.String() + "%eth0"} {
			testutil.WaitFor(b, c[0].name+" reaching "+addr, 10*time.Second, func() bool { return testutil.Ping(c[0].netns, addr) == nil })
		}
	}
	f, err := os.Open(nodePath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	n.nodeFD = int(f.Fd())
	if n.guard, err = portsec.New("br0", prefix, portsec.WithNetNS(n.nodeFD)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.guard.Uninstall() })
	pols, nss, all := trafficCluster(n.a, n.b)
	if len(pols) != 1000 {
		b.Fatalf("%d policies, want 1000", len(pols))
	}
	if n.program, err = netpol.Compile(pols, nss, all); err != nil {
		b.Fatal(err)
	}
	if len(n.program.Oversized) != 0 {
		b.Fatalf("policies left out: %v", n.program.Oversized)
	}
	n.serve(b)
	return n
}

// trafficCluster is what is in force with rules=portsec+netpol1000: a
// cluster of 100 namespaces (ns0 to ns99, labelled team=t0 to t9) and the
// namespace "bench" (team=bench); 10,000 pods of the shape of netpol's
// BenchmarkApply (pod i in ns<i%100>, labelled app=a<(i/100)%10>), of
// which the first 100 are on this node (198.18.83.100 to .199 and
// fd00:198:18:83::100 to ::199 on the bridge's subnet, with no interface:
// nobody sends from them) and 9,900 on other nodes (198.18.128.0/18 and
// fd00:198:18:84::/64); and exactly 1,000 NetworkPolicies:
//
//   - 994 of the synthetic cluster: policy i in ns<i%100> isolates app
//     a<i%10> for ingress, from pods app=a<(i+1)%10> of the namespaces of
//     team t<i%10>, on TCP 8000+i%100 (10 of the node's pods isolated,
//     each by 10 policies whose peers are 100 pods of other nodes);
//   - 5 selecting pod b (bench, app=server) for ingress: from pods
//     app=client of its namespace (pod a) on TCP 5201 and 5202, the only
//     rule that lets a in; from app=a1 of team t0 on TCP 9100; from team
//     t3 on TCP 8443; from 198.18.128.0/20 (except 198.18.130.0/24) and
//     fd00:198:18:84::/64 on TCP 8080; and a default deny of ingress for
//     every pod of bench (a too);
//   - 1 selecting pod a (app=client) for egress: to pods app=server of
//     its namespace on TCP 5201 and 5202, and to team t0 on UDP 53.
//
// Both a's and b's ports are guarded by portsec (their MAC, IPv4, IPv6
// and link-local addresses).
func trafficCluster(a, b *trafficPod) ([]*networkingv1.NetworkPolicy, []netpol.Namespace, []netpol.Pod) {
	const namespaces, pods, local, synthetic = 100, 10000, 100, 994
	var nss []netpol.Namespace
	for i := range namespaces {
		nss = append(nss, netpol.Namespace{Name: fmt.Sprintf("ns%d", i), Labels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}})
	}
	nss = append(nss, netpol.Namespace{Name: "bench", Labels: map[string]string{"team": "bench"}})
	var all []netpol.Pod
	for i := range pods {
		var v4, v6 netip.Addr
		if i < local {
			v4 = netip.MustParseAddr("198.18.83." + strconv.Itoa(100+i))
			v6 = netip.MustParseAddr("fd00:198:18:83::" + strconv.Itoa(100+i))
		} else {
			k := i - local
			v4 = netip.AddrFrom4([4]byte{198, 18, byte(128 + k>>8), byte(k)})
			v6 = netip.AddrFrom16([16]byte{0xfd, 0, 0x01, 0x98, 0, 0x18, 0, 0x84, 14: byte(k >> 8), 15: byte(k)})
		}
		all = append(all, netpol.Pod{
			Namespace: fmt.Sprintf("ns%d", i%namespaces), Name: fmt.Sprintf("p%d", i),
			Labels: map[string]string{"app": fmt.Sprintf("a%d", (i/namespaces)%10)},
			IPs:    []netip.Addr{v4, v6}, Local: i < local,
		})
	}
	all = append(all,
		netpol.Pod{Namespace: "bench", Name: "a", Labels: map[string]string{"app": "client"}, IPs: []netip.Addr{a.v4, a.v6}, Local: true},
		netpol.Pod{Namespace: "bench", Name: "b", Labels: map[string]string{"app": "server"}, IPs: []netip.Addr{b.v4, b.v6}, Local: true})

	sel := func(kv ...string) *metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &metav1.LabelSelector{MatchLabels: m}
	}
	port := func(proto corev1.Protocol, p int32) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(p)
		return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &v}
	}
	tcp := func(p int32) networkingv1.NetworkPolicyPort { return port(corev1.ProtocolTCP, p) }
	policy := func(name string, podSel *metav1.LabelSelector, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: *podSel, PolicyTypes: types, Ingress: in, Egress: eg},
		}
	}
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	var pols []*networkingv1.NetworkPolicy
	for i := range synthetic {
		pols = append(pols, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%namespaces), Name: fmt.Sprintf("pol%d", i)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", fmt.Sprintf("a%d", i%10)),
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", fmt.Sprintf("t%d", i%10)), PodSelector: sel("app", fmt.Sprintf("a%d", (i+1)%10))}},
					Ports: []networkingv1.NetworkPolicyPort{tcp(int32(8000 + i%100))},
				}},
			},
		})
	}
	pols = append(pols,
		policy("server-from-client", sel("app", "server"), ingress, []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "client")}},
			Ports: []networkingv1.NetworkPolicyPort{tcp(streamPort), tcp(connPort)},
		}}, nil),
		policy("server-from-monitoring", sel("app", "server"), ingress, []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "t0"), PodSelector: sel("app", "a1")}},
			Ports: []networkingv1.NetworkPolicyPort{tcp(9100)},
		}}, nil),
		policy("server-from-team3", sel("app", "server"), ingress, []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "t3")}},
			Ports: []networkingv1.NetworkPolicyPort{tcp(8443)},
		}}, nil),
		policy("server-from-cidr", sel("app", "server"), ingress, []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "198.18.128.0/20", Except: []string{"198.18.130.0/24"}}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "fd00:198:18:84::/64"}},
			},
			Ports: []networkingv1.NetworkPolicyPort{tcp(8080)},
		}}, nil),
		policy("default-deny-ingress", sel(), ingress, nil, nil),
		policy("client-egress", sel("app", "client"), []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "server")}}, Ports: []networkingv1.NetworkPolicyPort{tcp(streamPort), tcp(connPort)}},
			{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "t0")}}, Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53)}},
		}),
	)
	return pols, nss, all
}

// install writes both tables: portsec's, guarding a's and b's ports, and
// netpol's, by a new Enforcer (whose first Apply writes the whole table).
// It checks that a policy is in force: a's connection to b on a port no
// policy opens to a times out instead of being refused.
func (n *trafficNet) install(b *testing.B) {
	b.Helper()
	if skipped, err := n.guard.Sync([]portsec.Port{n.a.port(), n.b.port()}); err != nil || skipped != nil {
		b.Fatalf("portsec Sync: %v, skipped %v", err, skipped)
	}
	e, err := netpol.New(netpol.WithNetNS(n.nodeFD))
	if err != nil {
		b.Fatal(err)
	}
	st, err := e.Apply(n.program)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("netpol table: %d isolated pods, %d chains, %d rules, %d sets, %d elements", st.Pods, st.Chains, st.Rules, st.Sets, st.Elements)
	if err := n.dialOnce(n.b.v4, 9100, 300*time.Millisecond); !isTimeout(err) {
		b.Fatalf("a → b:9100 with the rules: %v, want a timeout (the default deny)", err)
	}
}

// uninstall removes both tables.
func (n *trafficNet) uninstall(b *testing.B) {
	b.Helper()
	if err := n.guard.Uninstall(); err != nil {
		b.Fatal(err)
	}
	e, err := netpol.New(netpol.WithNetNS(n.nodeFD))
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Uninstall(); err != nil {
		b.Fatal(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialOnce opens and closes one connection from a to addr:port.
func (n *trafficNet) dialOnce(addr netip.Addr, port uint16, timeout time.Duration) error {
	return testutil.InNetNS(n.a.path(), func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(addr, port).String(), timeout)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// serve makes b serve streamPort (read, and acknowledge each
// streamChunk with a byte) and connPort (read a request, write a reply,
// close: b closes first, so that TIME_WAIT is b's and a's ports are free
// again at once), on both addresses, until the benchmark ends.
func (n *trafficNet) serve(b *testing.B) {
	var wg sync.WaitGroup
	var listeners []net.Listener
	for _, ip := range []netip.Addr{n.b.v4, n.b.v6} {
		var ls, lc net.Listener
		err := testutil.InNetNS(n.b.path(), func() error {
			var err error
			if ls, err = net.Listen("tcp", netip.AddrPortFrom(ip, streamPort).String()); err != nil {
				return err
			}
			lc, err = net.Listen("tcp", netip.AddrPortFrom(ip, connPort).String())
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		listeners = append(listeners, ls, lc)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				c, err := ls.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					serveStream(c)
				}()
			}
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, messageSize)
			for {
				c, err := lc.Accept()
				if err != nil {
					return
				}
				c.SetDeadline(time.Now().Add(opTimeout))
				if _, err := io.ReadFull(c, buf); err == nil {
					c.Write(buf)
				}
				c.Close()
			}
		}()
	}
	b.Cleanup(func() {
		for _, l := range listeners {
			l.Close()
		}
		wg.Wait()
	})
}

// serveStream reads c until EOF, and writes a byte for each streamChunk
// read.
func serveStream(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 256<<10)
	ack := []byte{1}
	got := 0
	for {
		c.SetReadDeadline(time.Now().Add(opTimeout))
		k, err := c.Read(buf)
		for got += k; got >= streamChunk; got -= streamChunk {
			if _, err := c.Write(ack); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// benchStream: one TCP stream from a to b; an op is streamChunk bytes
// written by a, until b's acknowledgement of them came back (MB/s).
func (n *trafficNet) benchStream(b *testing.B, to netip.Addr) {
	var c net.Conn
	if err := testutil.InNetNS(n.a.path(), func() error {
		var err error
		c, err = net.DialTimeout("tcp", netip.AddrPortFrom(to, streamPort).String(), opTimeout)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, streamChunk)
	ack := make([]byte, 1)
	op := func() error {
		c.SetDeadline(time.Now().Add(opTimeout))
		if _, err := c.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(c, ack)
		return err
	}
	if err := op(); err != nil { // the connection's slow start, untimed
		b.Fatal(err)
	}
	b.SetBytes(streamChunk)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchConns: an op is a new TCP connection from a to b: connect, write
// a request, read the reply until b closes, close (conns/s).
func (n *trafficNet) benchConns(b *testing.B, to netip.Addr) {
	addr := netip.AddrPortFrom(to, connPort).String()
	req := make([]byte, messageSize)
	reply := make([]byte, messageSize+1)
	op := func() error {
		c, err := net.DialTimeout("tcp", addr, opTimeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(opTimeout))
		if _, err := c.Write(req); err != nil {
			return err
		}
		k, err := io.ReadAtLeast(c, reply, len(reply))
		if !errors.Is(err, io.ErrUnexpectedEOF) || k != messageSize {
			return fmt.Errorf("reply of %d bytes (%v), want %d and EOF", k, err, messageSize)
		}
		return nil
	}
	// Every op dials from a's namespace: the loop runs on a thread there.
	err := testutil.InNetNS(n.a.path(), func() error {
		if err := op(); err != nil {
			return err
		}
		for b.Loop() {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
}

// BenchmarkTraffic measures pod-to-pod traffic across a bridge, between
// pod a (client) and pod b (server) on one node, with
//
//   - rules=none: no nrinet table in the node's namespace (the bridge's
//     netfilter calls on, as nri-podnet sets them);
//   - rules=portsec+netpol1000: port security on a's and b's ports
//     (table bridge nrinet-podnet-portsec-br0) and 1,000 NetworkPolicies
//     (table inet nrinet-podnet-netpol), what trafficCluster says, which
//     let a reach b on the benchmark's ports;
//
// over IPv4 and IPv6 (proto=), for load=stream (one TCP stream's
// throughput: MB/s) and load=conns (new TCP connections, each with a
// request and a reply: conns/s). Each round installs or removes the
// tables between the configurations, untimed, and runs them in
// alternating order; NRINET_TRAFFIC_ROUNDS sets the rounds (default 1),
// and benchstat compares the configurations over them:
//
//	NRINET_TRAFFIC_ROUNDS=8 go test -run '^$' -bench BenchmarkTraffic -benchtime 1s ./podnet/portsec/ > traffic.txt
//	go tool benchstat -col /rules -ignore /round traffic.txt
func BenchmarkTraffic(b *testing.B) {
	rounds := 1
	if s := os.Getenv(trafficRoundsEnv); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			b.Fatalf("%s=%q: want a positive number", trafficRoundsEnv, s)
		}
	}
	n := newTrafficNet(b)
	configs := []struct {
		name  string
		apply func(*testing.B)
	}{{"none", n.uninstall}, {"portsec+netpol1000", n.install}}
	for r := range rounds {
		b.Run("round="+strconv.Itoa(r+1), func(b *testing.B) {
			for i := range configs {
				cfg := configs[(i+r)%len(configs)]
				b.Run("rules="+cfg.name, func(b *testing.B) {
					cfg.apply(b)
					for _, fam := range []struct {
						name string
						to   netip.Addr
					}{{"ipv4", n.b.v4}, {"ipv6", n.b.v6}} {
						b.Run("proto="+fam.name, func(b *testing.B) {
							b.Run("load=stream", func(b *testing.B) { n.benchStream(b, fam.to) })
							b.Run("load=conns", func(b *testing.B) { n.benchConns(b, fam.to) })
						})
					}
				})
			}
		})
	}
}
