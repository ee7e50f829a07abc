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

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// trafficRoundsEnv sets how many rounds BenchmarkTraffic runs.
const trafficRoundsEnv = "NRINET_TRAFFIC_ROUNDS"

// Pod b's ports, which the policies open to pod a (5201-5203), and the
// benchmark's sizes.
const (
	streamPort   = 5201 // Go: one stream; b reads and acknowledges each chunk
	connPort     = 5202 // Go: a connection per op, request, reply, close
	blockingPort = 5203 // the same as connPort, with blocking system calls
	streamChunk  = 4 << 20
	messageSize  = 64
	opTimeout    = 10 * time.Second // bounds every op and server read
)

// trafficPod is a pod: a namespace whose eth0 is on the node's bridge
// through a host veth of the guarded prefix, in the bridge's group.
type trafficPod struct {
	name, netns, veth string
	mac               net.HardwareAddr
	v4, v6, ll        netip.Addr
}

func (p *trafficPod) path() string { return filepath.Join(testutil.NetNSDir, p.netns) }

func (p *trafficPod) port() portsec.Port {
	return portsec.Port{ID: "id-" + p.name, Pod: "bench/" + p.name, Interface: p.veth, MAC: p.mac, Addrs: []netip.Addr{p.v4, p.v6, p.ll}}
}

// trafficNet is the node: a namespace with bridge br0 (198.18.83.1/24,
// fd00:198:18:83::1/64, its netfilter calls on as nri-podnet sets them)
// and pods a (client, .10 and ::10) and b (server, .11 and ::11).
type trafficNet struct {
	node    string
	nodeFD  int
	a, b    *trafficPod
	guard   *portsec.Guard
	program *netpol.Program // in force with the rules
	logged  bool            // the table's size
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
			ll:  netip.MustParseAddr(fmt.Sprintf("fe80::42:ff:fe00:83%02x", last))} // EUI-64 of the MAC
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
	// Until the pods reach each other on every address (neighbour
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
	b.Cleanup(func() {
		if e, err := netpol.New(netpol.WithNetNS(n.nodeFD)); err == nil {
			e.Uninstall()
		}
		if m, err := masq.New(masq.WithNetNS(n.nodeFD)); err == nil {
			m.Uninstall()
		}
		n.guard.Uninstall()
	})
	pols, nss, all := trafficCluster(n.a, n.b)
	if len(pols) != 1000 {
		b.Fatalf("%d policies, want 1000", len(pols))
	}
	if n.program, err = netpol.Compile(pols, nss, all); err != nil || len(n.program.Oversized) != 0 {
		b.Fatalf("Compile: %v, left out: %v", err, n.program.Oversized)
	}
	n.serve(b)
	return n
}

// trafficCluster is what is in force with rules=portsec+netpol1000: a
// cluster of 100 namespaces (ns0 to ns99, labelled team=t0 to t9) and the
// namespace "bench" (team=bench); 10,000 pods of the shape of netpol's
// BenchmarkSync (pod i in ns<i%100>, labelled app=a<(i/100)%10>), of
// which the first 100 are on this node (198.18.83.100 to .199 and
// fd00:198:18:83::100 to ::163 on the bridge's subnet, with no interface:
// nobody sends from them) and 9,900 on other nodes (198.18.128.0/18 and
// fd00:198:18:84::/64); pods a and b in bench; and exactly 1,000
// NetworkPolicies:
//
//   - 994 of the synthetic cluster: policy i in ns<i%100> isolates app
//     a<i%10> for ingress, from pods app=a<(i+1)%10> of the namespaces of
//     team t<i%10>, on TCP 8000+i%100 (10 of the node's pods isolated,
//     each by 10 policies whose peers are 100 pods of other nodes);
//   - 5 selecting pod b (app=server) for ingress: from pods app=client of
//     its namespace (pod a) on TCP 5201-5203, the only rule that lets a
//     in; from app=a1 of team t0 on TCP 9100; from team t3 on TCP 8443;
//     from 198.18.128.0/20 (except 198.18.130.0/24) and
//     fd00:198:18:84::/64 on TCP 8080; and a default deny of ingress for
//     every pod of bench (a too);
//   - 1 selecting pod a (app=client) for egress: to pods app=server of its
//     namespace on TCP 5201-5203, and to team t0 on UDP 53.
//
// portsec guards a's and b's ports (their MAC, IPv4, IPv6 and link-local
// addresses).
func trafficCluster(a, b *trafficPod) ([]*networkingv1.NetworkPolicy, []netpol.Namespace, []netpol.Pod) {
	const namespaces, pods, local, synthetic = 100, 10000, 100, 994
	var nss []netpol.Namespace
	for i := range namespaces {
		nss = append(nss, netpol.Namespace{Name: fmt.Sprintf("ns%d", i), Labels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}})
	}
	nss = append(nss, netpol.Namespace{Name: "bench", Labels: map[string]string{"team": "bench"}})
	var all []netpol.Pod
	for i := range pods {
		// On the bridge's subnet, or another node's.
		v4 := netip.AddrFrom4([4]byte{198, 18, 83, byte(100 + i%local)})
		v6 := netip.AddrFrom16([16]byte{0xfd, 0, 0x01, 0x98, 0, 0x18, 0, 0x83, 14: 0x01, 15: byte(i % local)})
		if k := i - local; k >= 0 {
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
	ports := func(proto corev1.Protocol, first, last int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(first)
		pp := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
		if last != first {
			pp.EndPort = &last
		}
		return []networkingv1.NetworkPolicyPort{pp}
	}
	from := func(peers ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer { return peers }
	in := func(ns, name string, podSel *metav1.LabelSelector, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: *podSel, Ingress: rules,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		}
	}
	var pols []*networkingv1.NetworkPolicy
	for i := range synthetic {
		pols = append(pols, in(fmt.Sprintf("ns%d", i%namespaces), fmt.Sprintf("pol%d", i), sel("app", fmt.Sprintf("a%d", i%10)),
			networkingv1.NetworkPolicyIngressRule{
				From:  from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", fmt.Sprintf("t%d", i%10)), PodSelector: sel("app", fmt.Sprintf("a%d", (i+1)%10))}),
				Ports: ports(corev1.ProtocolTCP, int32(8000+i%100), int32(8000+i%100)),
			}))
	}
	server := sel("app", "server")
	pols = append(pols,
		in("bench", "server-from-client", server, networkingv1.NetworkPolicyIngressRule{
			From: from(networkingv1.NetworkPolicyPeer{PodSelector: sel("app", "client")}), Ports: ports(corev1.ProtocolTCP, streamPort, blockingPort)}),
		in("bench", "server-from-monitoring", server, networkingv1.NetworkPolicyIngressRule{
			From: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "t0"), PodSelector: sel("app", "a1")}), Ports: ports(corev1.ProtocolTCP, 9100, 9100)}),
		in("bench", "server-from-team3", server, networkingv1.NetworkPolicyIngressRule{
			From: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "t3")}), Ports: ports(corev1.ProtocolTCP, 8443, 8443)}),
		in("bench", "server-from-cidr", server, networkingv1.NetworkPolicyIngressRule{
			From: from(
				networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "198.18.128.0/20", Except: []string{"198.18.130.0/24"}}},
				networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "fd00:198:18:84::/64"}}),
			Ports: ports(corev1.ProtocolTCP, 8080, 8080)}),
		in("bench", "default-deny-ingress", sel()),
		&networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "client-egress"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "client"),
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{
					{To: from(networkingv1.NetworkPolicyPeer{PodSelector: server}), Ports: ports(corev1.ProtocolTCP, streamPort, blockingPort)},
					{To: from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "t0")}), Ports: ports(corev1.ProtocolUDP, 53, 53)},
				}},
		})
	return pols, nss, all
}

// install writes both tables: portsec's, guarding a's and b's ports, and
// netpol's, by a new Enforcer (whose first Sync writes the whole table).
// It checks that the policies are in force: a's connection to b on a port
// they do not open to a times out instead of being refused.
func (n *trafficNet) install(b *testing.B) {
	if skipped, err := n.guard.Sync([]portsec.Port{n.a.port(), n.b.port()}); err != nil || skipped != nil {
		b.Fatalf("portsec Sync: %v, skipped %v", err, skipped)
	}
	e, err := netpol.New(netpol.WithNetNS(n.nodeFD))
	if err != nil {
		b.Fatal(err)
	}
	st, err := e.Sync(n.program)
	if err != nil {
		b.Fatal(err)
	}
	if !n.logged {
		n.logged = true
		b.Logf("netpol table: %d isolated pods, %d chains, %d rules, %d sets, %d elements", st.Pods, st.Chains, st.Rules, st.Sets, st.Elements)
	}
	err = testutil.InNetNS(n.a.path(), func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(n.b.v4, 9100).String(), 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		b.Fatalf("a → b:9100 with the rules: %v, want a timeout (the default deny)", err)
	}
}

// uninstall removes both tables.
func (n *trafficNet) uninstall(b *testing.B) {
	e, err := netpol.New(netpol.WithNetNS(n.nodeFD))
	if err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(n.guard.Uninstall(), e.Uninstall()); err != nil {
		b.Fatal(err)
	}
}

// The masquerade's prefixes: the node's pod subnets and the cluster's.
var (
	trafficPodCIDRs     = []netip.Prefix{netip.MustParsePrefix("198.18.83.0/24"), netip.MustParsePrefix("fd00:198:18:83::/64")}
	trafficClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:198:18::/48")}
)

// masquerade writes (on) or removes nri-podnet's masquerade table, which
// every nri-podnet node has: its nat chain turns conntrack on in the
// node's namespace, as kube-proxy's NAT rules do on any Kubernetes node.
func (n *trafficNet) masquerade(b *testing.B, on bool) {
	m, err := masq.New(masq.WithNetNS(n.nodeFD))
	if err != nil {
		b.Fatal(err)
	}
	if on {
		_, err = m.Sync(trafficPodCIDRs, trafficClusterCIDRs)
	} else {
		err = m.Uninstall()
	}
	if err != nil {
		b.Fatal(err)
	}
}

// serve makes b serve, on both addresses until the benchmark ends:
// streamPort (read, and answer a byte for each streamChunk read) and
// connPort (read a request, write it back, close) through Go's net
// package, and blockingPort (connPort's protocol) with blocking system
// calls. b closes first, so that TIME_WAIT is b's and a's ports are free
// again at once.
func (n *trafficNet) serve(b *testing.B) {
	var wg sync.WaitGroup
	var closers []func()
	for _, ip := range []netip.Addr{n.b.v4, n.b.v6} {
		var ls, lc net.Listener
		var raw int
		err := testutil.InNetNS(n.b.path(), func() error {
			var err error
			if ls, err = net.Listen("tcp", netip.AddrPortFrom(ip, streamPort).String()); err != nil {
				return err
			}
			if lc, err = net.Listen("tcp", netip.AddrPortFrom(ip, connPort).String()); err != nil {
				return err
			}
			raw, err = blockingSocket(netip.AddrPortFrom(ip, blockingPort), true)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		closers = append(closers, func() { ls.Close() }, func() { lc.Close() },
			func() { unix.Shutdown(raw, unix.SHUT_RDWR) }) // wakes its Accept
		wg.Add(3)
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
					defer c.Close()
					buf, ack, got := make([]byte, 256<<10), []byte{1}, 0
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
		go func() {
			defer wg.Done()
			defer unix.Close(raw)
			buf := make([]byte, messageSize)
			for {
				fd, _, err := unix.Accept4(raw, unix.SOCK_CLOEXEC)
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue // the listener's receive timeout, a signal
				} else if err != nil {
					return
				}
				if k, err := readFull(fd, buf); err == nil && k == messageSize {
					writeAll(fd, buf)
				}
				unix.Close(fd)
			}
		}()
	}
	b.Cleanup(func() {
		for _, c := range closers {
			c()
		}
		wg.Wait()
	})
}

// blockingSocket returns a blocking TCP socket with opTimeout as its send
// (and connect) and receive timeouts, bound to addr and listening if
// listen, else connected to addr, in the calling thread's network
// namespace.
func blockingSocket(addr netip.AddrPort, listen bool) (int, error) {
	family, sa := unix.AF_INET6, unix.Sockaddr(&unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()})
	if addr.Addr().Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	tv := unix.NsecToTimeval(opTimeout.Nanoseconds())
	err = errors.Join(unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv), unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	if err == nil && listen {
		err = errors.Join(unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1), unix.Bind(fd, sa), unix.Listen(fd, 128))
	} else if err == nil {
		if err = unix.Connect(fd, sa); errors.Is(err, unix.EINTR) {
			// A signal (the Go runtime's) interrupted it; the connection
			// goes on: wait for it.
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			var k, soerr int
			if k, err = eintr(func() (int, error) { return unix.Poll(fds, int(opTimeout.Milliseconds())) }); err == nil && k == 0 {
				err = unix.ETIMEDOUT
			} else if err == nil {
				if soerr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && soerr != 0 {
					err = unix.Errno(soerr)
				}
			}
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", addr, err)
	}
	return fd, nil
}

// eintr calls f again while a signal interrupts it: the Go runtime's
// signals do, and a socket with a timeout does not restart its calls.
func eintr[T any](f func() (T, error)) (T, error) {
	for {
		if v, err := f(); !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

// readFull reads into buf until it is full or the peer closes.
func readFull(fd int, buf []byte) (int, error) {
	got := 0
	for got < len(buf) {
		k, err := eintr(func() (int, error) { return unix.Read(fd, buf[got:]) })
		if err != nil || k == 0 {
			return got, err
		}
		got += k
	}
	return got, nil
}

// writeAll writes buf.
func writeAll(fd int, buf []byte) error {
	for len(buf) > 0 {
		k, err := eintr(func() (int, error) { return unix.Write(fd, buf) })
		if err != nil {
			return err
		}
		buf = buf[k:]
	}
	return nil
}

// cpuTime is the CPU time the process has used, all threads, user and
// system: the client's and the server's, and the kernel's processing of
// their packets done in their system calls (the softirqs a transmit
// raises run there), as nftables' evaluation and conntrack are.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	buf, ack := make([]byte, streamChunk), make([]byte, 1)
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
	cpu := cpuTime()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/op")
}

// benchConns: an op is a new TCP connection from a to b: connect, write
// a request, read the reply until b closes, close (conns/s). With
// blocking, the client and server use blocking system calls instead of
// Go's net package (whose poller wakes goroutines on other threads): the
// work of a connection is then mostly the kernel's.
func (n *trafficNet) benchConns(b *testing.B, to netip.Addr, blocking bool) {
	req, reply := make([]byte, messageSize), make([]byte, messageSize+1)
	check := func(k int, err error) error {
		if (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) || k != messageSize {
			return fmt.Errorf("reply of %d bytes (%v), want %d and EOF", k, err, messageSize)
		}
		return nil
	}
	op := func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(to, connPort).String(), opTimeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(opTimeout))
		if _, err := c.Write(req); err != nil {
			return err
		}
		return check(io.ReadAtLeast(c, reply, len(reply)))
	}
	if blocking {
		op = func() error {
			fd, err := blockingSocket(netip.AddrPortFrom(to, blockingPort), false)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := writeAll(fd, req); err != nil {
				return err
			}
			return check(readFull(fd, reply))
		}
	}
	// Every op dials from a's namespace: the loop runs on a thread there.
	var cpu time.Duration
	err := testutil.InNetNS(n.a.path(), func() error {
		if err := op(); err != nil {
			return err
		}
		cpu = cpuTime()
		for b.Loop() {
			if err := op(); err != nil {
				return err
			}
		}
		cpu = cpuTime() - cpu
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
}

// BenchmarkTraffic measures pod-to-pod traffic across a bridge, from pod
// a to pod b of one node, with
//
//   - rules=none: no nrinet table in the node's namespace (the bridge's
//     netfilter calls on, as nri-podnet sets them; no conntrack);
//   - rules=portsec+netpol1000: port security on a's and b's ports
//     (table bridge nrinet-podnet-portsec-br0) and 1,000 NetworkPolicies
//     (table inet nrinet-podnet-netpol), as trafficCluster says, which let
//     a reach b on the benchmark's ports;
//   - rules=masq: nri-podnet's masquerade table alone (table inet
//     nrinet-podnet), which turns conntrack on in the node's namespace as
//     NAT does on every Kubernetes node (kube-proxy's, the masquerade's):
//     a node on nri-podnet without port security and policies;
//   - rules=masq+portsec+netpol1000: the masquerade, port security and
//     the policies, a node as nri-podnet runs it;
//
// over IPv4 and IPv6 (proto=), for load=stream (one TCP stream's
// throughput, MB/s), load=conns (new TCP connections, each with a request
// and a reply, conns/s) and load=conns-blocking (the same with blocking
// system calls). Each reports the process's CPU time per op (cpu-µs/op),
// which counts the work and not the waiting for a CPU. The four
// configurations run back to back for each protocol and load, the tables
// written or removed before each (untimed), the first of them rotating;
// NRINET_TRAFFIC_ROUNDS (default 1) repeats the whole, so that benchstat
// compares samples taken side by side:
//
//	NRINET_TRAFFIC_ROUNDS=10 go test -run '^$' -bench BenchmarkTraffic -benchtime 1s ./podnet/portsec/ > traffic.txt
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
	}{
		{"none", func(b *testing.B) { n.masquerade(b, false); n.uninstall(b) }},
		{"portsec+netpol1000", func(b *testing.B) { n.masquerade(b, false); n.install(b) }},
		{"masq", func(b *testing.B) { n.uninstall(b); n.masquerade(b, true) }},
		{"masq+portsec+netpol1000", func(b *testing.B) { n.masquerade(b, true); n.install(b) }},
	}
	families := []struct {
		name string
		to   netip.Addr
	}{{"ipv4", n.b.v4}, {"ipv6", n.b.v6}}
	loads := []struct {
		name string
		run  func(*testing.B, netip.Addr)
	}{
		{"stream", n.benchStream},
		{"conns", func(b *testing.B, to netip.Addr) { n.benchConns(b, to, false) }},
		{"conns-blocking", func(b *testing.B, to netip.Addr) { n.benchConns(b, to, true) }},
	}
	for r := range rounds {
		b.Run("round="+strconv.Itoa(r+1), func(b *testing.B) {
			for fi, fam := range families {
				b.Run("proto="+fam.name, func(b *testing.B) {
					for li, load := range loads {
						b.Run("load="+load.name, func(b *testing.B) {
							// Which configuration goes first changes
							// from pair to pair and from round to round.
							first := fi*len(loads) + li + r
							for i := range configs {
								cfg := configs[(first+i)%len(configs)]
								b.Run("rules="+cfg.name, func(b *testing.B) {
									cfg.apply(b)
									load.run(b, fam.to)
								})
							}
						})
					}
				})
			}
		})
	}
}
