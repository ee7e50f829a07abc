package podnet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

// routeLocalnet reads net.ipv4.conf.IFACE.route_localnet in the node's
// namespace.
func (e *nodeEnv) routeLocalnet(iface string) string {
	e.t.Helper()
	return strings.TrimSpace(testutil.Run(e.t, "ip", "netns", "exec", e.node, "cat", "/proc/sys/net/ipv4/conf/"+iface+"/route_localnet"))
}

// nodeNFT opens nftables in the node's namespace (whose file stays open
// until the test ends: the connection enters it at every call).
func (e *nodeEnv) nodeNFT() *nftables.Conn {
	e.t.Helper()
	f, err := os.Open(e.nodePath)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { f.Close() })
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// guardRules reads the rules of the host port table's guard chain in the
// node's namespace, read through google/nftables (not package hostport):
// the packets each counted, by the network its comment names
// ("127.0.0.0/8", "::1/128"). No chain, no rules.
func (e *nodeEnv) guardRules() map[string]uint64 {
	e.t.Helper()
	c := e.nodeNFT()
	tb := &nftables.Table{Name: hostport.TableName, Family: nftables.TableFamilyINet}
	rules, err := c.GetRules(tb, &nftables.Chain{Name: hostport.ChainGuard, Table: tb})
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, r := range rules {
		s, _ := userdata.GetString(r.UserData, userdata.TypeComment)
		for _, n := range []string{"127.0.0.0/8", "::1/128"} {
			if !strings.Contains(s, " "+n+" ") {
				continue
			}
			for _, x := range r.Exprs {
				if ctr, ok := x.(*expr.Counter); ok {
					out[n] = ctr.Packets
				}
			}
		}
	}
	return out
}

// loopbackService listens on TCP and UDP port on ip in the node's
// namespace, as a service meant for the node alone does, and counts what
// reaches it.
type loopbackService struct {
	addr     netip.AddrPort
	accepted atomic.Int64
	received atomic.Int64
}

func (e *nodeEnv) loopbackService(ip string, port uint16) *loopbackService {
	e.t.Helper()
	s := &loopbackService{addr: netip.AddrPortFrom(netip.MustParseAddr(ip), port)}
	var l net.Listener
	var pc net.PacketConn
	var err, uerr error
	inNetNS(e.t, e.nodePath, func() {
		l, err = net.Listen("tcp", s.addr.String())
		pc, uerr = net.ListenPacket("udp", s.addr.String())
	})
	if err = errors.Join(err, uerr); err != nil {
		e.t.Fatal(err)
	}
	e.serverMu.Lock()
	e.listeners = append(e.listeners, l, pc)
	e.serverMu.Unlock()
	e.servers.Add(2)
	go func() {
		defer e.servers.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.Write([]byte("secret"))
			c.Close()
		}
	}()
	go func() {
		defer e.servers.Done()
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			s.received.Add(1)
		}
	}()
	return s
}

// attackLoopback makes the pod in the namespace at path (named name)
// send to the node's loopback networks through the bridge, as an attacker
// with CAP_NET_ADMIN in its pod does (CVE-2020-8558): its own lo no longer
// takes 127.0.0.0/8 and ::1 first (the local table's rule moves after a
// rule that sends them to the gateways), and its eth0 accepts answers from
// 127.0.0.0/8 (route_localnet).
func (e *nodeEnv) attackLoopback(name string) {
	e.t.Helper()
	ns := e.netPfx + "-" + name
	gw4 := netip.MustParsePrefix(e.cfg.Subnets[0]).Addr().Next()
	gw6 := netip.MustParsePrefix(e.cfg.Subnets[1]).Addr().Next()
	run := func(args ...string) { e.t.Helper(); testutil.Run(e.t, "ip", append([]string{"-n", ns}, args...)...) }
	for _, f := range []struct{ fam, net, gw string }{{"-4", "127.0.0.0/8", gw4.String()}, {"-6", "::1/128", gw6.String()}} {
		run(f.fam, "route", "add", f.net, "via", f.gw, "dev", "eth0", "table", "100")
		run(f.fam, "rule", "add", "pref", "10", "to", f.net, "lookup", "100")
		run(f.fam, "rule", "add", "pref", "100", "lookup", "local")
		run(f.fam, "rule", "del", "pref", "0")
	}
	testutil.Run(e.t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.eth0.route_localnet=1")
}

// sendFrom sends from the pod's namespace at path to each service: a TCP
// connection (it must fail) and three UDP datagrams.
func sendFrom(t *testing.T, path string, services []*loopbackService) {
	t.Helper()
	for _, s := range services {
		if got, err := tcpGet(t, path, netip.Addr{}, s.addr, time.Second); err == nil {
			t.Errorf("a pod connected to the node's loopback service %s and read %q", s.addr, got)
		}
		var c net.Conn
		var err error
		inNetNS(t, path, func() { c, err = net.Dial("udp", s.addr.String()) })
		if err != nil {
			t.Fatalf("a pod's UDP socket to %s: %v", s.addr, err)
		}
		for range 3 {
			c.Write([]byte("hostname"))
		}
		c.Close()
	}
}

// TestPodnet_LocalhostGuard is CVE-2020-8558 against nri-podnet with
// host ports reachable from the node's 127.0.0.1: the bridge has
// route_localnet on, and a pod that sends through it to 127.0.0.1,
// 127.0.0.2 and ::1, where the node has services listening on its
// loopback only, is dropped by the guard, which counts it, and the
// services see nothing. The node's own connection from 127.0.0.1 to a
// host port reaches the pod. Without the guard (taken out by hand) the
// same packets reach the IPv4 services: the guard is what stops them.
// With the last host port the guard and route_localnet go.
func TestPodnet_LocalhostGuard(t *testing.T) {
	e := newNodeEnv(t, nil)
	lo := netip.MustParseAddr("127.0.0.1")
	web, _, _ := e.runPod("web", pm(tcp, 54700, ""), pm(udp, 54700, ""))
	attacker, _, _ := e.runPod("attacker")
	attackerPath := e.podPaths[attacker.Id]

	// The node's own connection from 127.0.0.1, as critest's port mapping
	// check makes it, over TCP and UDP.
	e.reach("curl http://127.0.0.1:54700 on the node", e.nodePath, "tcp", lo, netip.AddrPortFrom(lo, 54700), "web")
	e.reach("UDP to 127.0.0.1:54700 on the node", e.nodePath, "udp", netip.Addr{}, netip.AddrPortFrom(lo, 54700), "web")
	if got := e.routeLocalnet(e.cfg.Bridge); got != "1" {
		t.Errorf("route_localnet of the bridge %s = %s with a host port, want 1", e.cfg.Bridge, got)
	}
	if got := e.routeLocalnet("up0"); got != "0" {
		t.Errorf("route_localnet of the uplink up0 = %s, want 0 (the bridge only)", got)
	}

	services := []*loopbackService{
		e.loopbackService("127.0.0.1", 54701), e.loopbackService("127.0.0.2", 54701), e.loopbackService("::1", 54701),
	}
	before := e.guardRules()
	if len(before) != 2 {
		t.Fatalf("guard rules %v, want one for 127.0.0.0/8 and one for ::1/128", before)
	}
	e.attackLoopback("attacker")
	sendFrom(t, attackerPath, services)
	// Every datagram was dropped and counted (and a TCP SYN or more per
	// service): then none can reach a service any more.
	err := testutil.Poll(5*time.Second, 20*time.Millisecond, func() error {
		got := e.guardRules()
		if got["127.0.0.0/8"]-before["127.0.0.0/8"] < 2*(1+3) || got["::1/128"]-before["::1/128"] < 1+3 {
			return fmt.Errorf("the guard counted %v (before %v); want 8 packets more to 127.0.0.0/8 and 4 to ::1", got, before)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	for _, s := range services {
		if n, m := s.accepted.Load(), s.received.Load(); n != 0 || m != 0 {
			t.Errorf("the node's loopback service %s accepted %d connections and received %d datagrams from a pod", s.addr, n, m)
		}
	}

	// The same without the guard: route_localnet on the bridge lets the
	// pod in (over IPv4; the kernel drops IPv6 to ::1 by itself).
	c := e.nodeNFT()
	tb := &nftables.Table{Name: hostport.TableName, Family: nftables.TableFamilyINet}
	c.FlushChain(&nftables.Chain{Name: hostport.ChainGuard, Table: tb})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, err := tcpGet(t, attackerPath, netip.Addr{}, services[0].addr, 2*time.Second); err != nil || got != "secret" {
		t.Errorf("without the guard a pod's connection to %s: %q, %v; want it to reach the service (else this test proves nothing)", services[0].addr, got, err)
	}

	// The last host port goes: route_localnet first, then the table.
	e.stopPod(web)
	if got := e.routeLocalnet(e.cfg.Bridge); got != "0" {
		t.Errorf("route_localnet of the bridge = %s after the last host port went, want 0", got)
	}
	for _, tb := range e.nodeTables() {
		if tb == hostport.TableName {
			t.Errorf("table %s is left after the last host port went", tb)
		}
	}
}

// stopPod stops a pod through the runtime.
func (e *nodeEnv) stopPod(pod *api.PodSandbox) {
	e.t.Helper()
	if err := e.rt.StopPodSandbox(e.t.Context(), &api.StopPodSandboxRequest{Pod: pod}); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	delete(e.pods, pod.Id)
	e.mu.Unlock()
}

// TestPodnet_NoLocalhostHostPorts: a node that had host ports reachable
// from 127.0.0.1 restarts nri-podnet with noLocalhostHostPorts. The
// bridge's route_localnet goes back to 0, Synchronize takes the guard and
// the masquerade out and keeps the pod's rules; a connection from
// 127.0.0.1 no longer reaches the pod, and one from the node's address
// still does (to 127.0.0.1 as well, as the conformance test's curl
// --interface does). A pod started then changes none of it.
func TestPodnet_NoLocalhostHostPorts(t *testing.T) {
	e := newNodeEnv(t, nil)
	lo := netip.MustParseAddr("127.0.0.1")
	ap := netip.AddrPortFrom
	e.runPod("web", pm(tcp, 54800, ""), pm(tcp, 54801, "127.0.0.1"))
	e.reach("from 127.0.0.1 before", e.nodePath, "tcp", lo, ap(lo, 54800), "web")

	e.proc.kill()
	e.cfg.NoLocalhostHostPorts = true
	b, _ := json.Marshal(e.cfg)
	if err := os.WriteFile(e.cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.startNodePlugin()

	if got := e.routeLocalnet(e.cfg.Bridge); got != "0" {
		t.Errorf("route_localnet of the bridge = %s with noLocalhostHostPorts, want 0", got)
	}
	if got := e.guardRules(); len(got) != 0 {
		t.Errorf("guard rules %v with noLocalhostHostPorts, want none", got)
	}
	rules := e.hostPortRules()
	for _, r := range rules {
		if r.Pod == "" {
			t.Errorf("rule %q with noLocalhostHostPorts", r.Comment)
		}
	}
	if len(rules) == 0 {
		t.Error("no host port rule of web left")
	}
	if got, err := tcpGet(t, e.nodePath, lo, ap(lo, 54800), time.Second); err == nil {
		t.Errorf("127.0.0.1 to 127.0.0.1:54800 answered %q with noLocalhostHostPorts", got)
	}
	e.reach("from the node's address", e.nodePath, "tcp", netip.Addr{}, ap(e.nodeIP4, 54800), "web")
	e.reach("curl --interface nodeIP http://127.0.0.1:54801", e.nodePath, "tcp", e.nodeIP4, ap(lo, 54801), "web")

	// A pod with a host port started now: route_localnet stays 0, and
	// no guard comes.
	e.runPod("api", pm(tcp, 54802, ""))
	if got, guard := e.routeLocalnet(e.cfg.Bridge), e.guardRules(); got != "0" || len(guard) != 0 {
		t.Errorf("after another host port with noLocalhostHostPorts: route_localnet %s, guard rules %v; want 0 and none", got, guard)
	}
	if got, err := tcpGet(t, e.nodePath, lo, ap(lo, 54802), time.Second); err == nil {
		t.Errorf("127.0.0.1 to 127.0.0.1:54802 answered %q with noLocalhostHostPorts", got)
	}
}

// hostPortRules reads the host port table's rules in the node's
// namespace back.
func (e *nodeEnv) hostPortRules() []hostport.Rule {
	e.t.Helper()
	f, err := os.Open(e.nodePath)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	m, err := hostport.New(hostport.WithNetNS(int(f.Fd())))
	if err != nil {
		e.t.Fatal(err)
	}
	rules, err := m.Rules()
	if err != nil {
		e.t.Fatal(err)
	}
	return rules
}
