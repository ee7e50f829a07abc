package podnet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

// nodeEnv is nri-podnet running in a "node" network namespace, started
// by hand against a runtime of the test's, with an "outside" namespace
// linked to the node by a veth (the node's uplink, with nodeIP4 and
// nodeIP6) and pods of their own namespaces on the plugin's bridge. The
// node's net.bridge.bridge-nf-call-iptables and -ip6tables are 0, so
// that only the bridge's own switches, which nri-podnet turns on, let
// bridged traffic pass netfilter.
type nodeEnv struct {
	*extEnv
	node, out          string // namespace names
	nodePath, outPath  string
	nodeIP4, nodeIP6   netip.Addr
	metrics            string // base URL of the plugin's /metrics, in the node's namespace
	servers            sync.WaitGroup
	serverMu           sync.Mutex
	listeners          []io.Closer
	podNames, podPaths map[string]string // pod ID → name, namespace path
}

// newNodeEnv sets the namespaces up and starts the runtime and
// nri-podnet, with the configuration edit changes (if not nil).
func newNodeEnv(t *testing.T, edit func(*podnet.Config)) *nodeEnv {
	t.Helper()
	e := &nodeEnv{extEnv: newExtEnv(t), podNames: map[string]string{}, podPaths: map[string]string{}}
	pfx := "nrh" + randHex(3)
	e.node, e.out = pfx+"-node", pfx+"-out"
	e.netPfx = pfx
	e.nodePath, e.outPath = testutil.NewNetNS(t, e.node), testutil.NewNetNS(t, e.out)
	x := 1 + int(randHex(1)[0])%90
	e.nodeIP4 = netip.MustParseAddr(fmt.Sprintf("198.19.%d.1", x))
	e.nodeIP6 = netip.MustParseAddr(fmt.Sprintf("fd00:198:18:%x::1", 0xff00+x))
	run := func(args ...string) { t.Helper(); testutil.Run(t, "ip", args...) }
	run("-n", e.node, "link", "set", "lo", "up")
	run("-n", e.out, "link", "set", "lo", "up")
	run("netns", "exec", e.node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		"net.bridge.bridge-nf-call-iptables=0", "net.bridge.bridge-nf-call-ip6tables=0")
	run("-n", e.node, "link", "add", "up0", "type", "veth", "peer", "name", "eth0", "netns", e.out)
	run("-n", e.node, "addr", "add", e.nodeIP4.String()+"/24", "dev", "up0")
	run("-n", e.node, "addr", "add", e.nodeIP6.String()+"/64", "dev", "up0", "nodad")
	run("-n", e.node, "link", "set", "up0", "up")
	run("-n", e.out, "addr", "add", e.nodeIP4.Next().String()+"/24", "dev", "eth0")
	run("-n", e.out, "addr", "add", e.nodeIP6.Next().String()+"/64", "dev", "eth0", "nodad")
	run("-n", e.out, "link", "set", "eth0", "up")

	e.cfg = podnet.Config{
		Bridge:   "nrhb" + randHex(4),
		Subnets:  []string{fmt.Sprintf("198.18.%d.0/24", x), fmt.Sprintf("fd00:198:18:%x::/64", x)},
		MTU:      1400,
		StateDir: e.cfg.StateDir,
	}
	if edit != nil {
		edit(&e.cfg)
	}
	b, _ := json.Marshal(e.cfg)
	if err := os.WriteFile(e.cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.serverMu.Lock()
		for _, l := range e.listeners {
			l.Close()
		}
		e.serverMu.Unlock()
		e.servers.Wait()
	})
	e.startRuntime()
	e.startNodePlugin()
	return e
}

// startNodePlugin starts nri-podnet in the node's namespace, serving its
// metrics there, and waits until it joined the runtime.
func (e *nodeEnv) startNodePlugin() {
	e.t.Helper()
	p := &pluginProc{logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", e.node, binary, "-config", e.cfgFile, "-socket", e.sock, "-verbose",
		"-http-address", "127.0.0.1:0")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	e.t.Cleanup(func() { p.kill() })
	e.proc = p
	e.metrics = "http://" + testutil.LoggedAddress(e.t, p.logs, "serving /healthz, /readyz and /metrics", 20*time.Second, p.exited) + "/metrics"
	e.waitJoined("nri-podnet in the node's namespace")
}

// runPod runs a pod named name with the port mappings, through the
// runtime, and serves its name on TCP and UDP port 8080 in its namespace.
// It returns the pod and its addresses (IPv4, IPv6).
func (e *nodeEnv) runPod(name string, pms ...*api.PortMapping) (*api.PodSandbox, netip.Addr, netip.Addr) {
	e.t.Helper()
	pod, rec, err := e.tryPod(name, pms...)
	if err != nil {
		e.t.Fatalf("RunPodSandbox %s: %v\n%s", name, err, e.proc.logs)
	}
	e.mu.Lock()
	e.pods[pod.Id] = pod
	e.mu.Unlock()
	ips := rec.GetNetwork().GetIps()
	e.serve(e.podPaths[pod.Id], name)
	return pod, netip.MustParseAddr(ips[0]), netip.MustParseAddr(ips[1])
}

// tryPod runs a pod with a new network namespace through the runtime.
func (e *nodeEnv) tryPod(name string, pms ...*api.PortMapping) (*api.PodSandbox, *api.PodNetworkRecord, error) {
	e.t.Helper()
	path := testutil.NewNetNS(e.t, e.netPfx+"-"+name)
	pod := &api.PodSandbox{
		Id: "pod-" + e.netPfx + "-" + name, Name: name, Namespace: "default",
		Linux:        &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: path}}},
		PortMappings: pms,
	}
	e.podNames[pod.Id], e.podPaths[pod.Id] = name, path
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	return pod, rec, err
}

// serve answers every TCP connection and UDP datagram to port 8080 in the
// namespace at path with name: the /hostname of the conformance test's
// agnhost netexec.
func (e *nodeEnv) serve(path, name string) {
	e.t.Helper()
	var l net.Listener
	var pc net.PacketConn
	var err, uerr error
	inNetNS(e.t, path, func() {
		l, err = net.Listen("tcp", "[::]:8080")
		pc, uerr = net.ListenPacket("udp", "[::]:8080")
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
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write([]byte(name))
			c.Close()
		}
	}()
	go func() {
		defer e.servers.Done()
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(name), from)
		}
	}()
}

// tcpGet connects from the namespace at path to dst, from local if it is
// valid (curl --interface), and returns what the server sent.
func tcpGet(t *testing.T, path string, local netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, error) {
	t.Helper()
	d := &net.Dialer{Timeout: timeout}
	if local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	var c net.Conn
	var err error
	inNetNS(t, path, func() { c, err = d.Dial("tcp", dst.String()) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(c)
	return string(b), err
}

// udpAsk sends "hostname" from the namespace at path to dst until an
// answer comes (the first datagrams may wait for neighbour discovery) and
// returns it (echo hostname | nc -u).
func udpAsk(t *testing.T, path string, dst netip.AddrPort) (string, error) {
	t.Helper()
	var c net.Conn
	var err error
	inNetNS(t, path, func() { c, err = net.Dial("udp", dst.String()) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	buf := make([]byte, 64)
	for range 10 {
		if _, err := c.Write([]byte("hostname")); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, err := c.Read(buf); err == nil {
			return string(buf[:n]), nil
		}
	}
	return "", fmt.Errorf("no answer from %s", dst)
}

// reach checks that a client in the namespace at path gets want from dst
// over proto ("tcp" or "udp"), from local if valid.
func (e *nodeEnv) reach(what, path, proto string, local netip.Addr, dst netip.AddrPort, want string) {
	e.t.Helper()
	var got string
	var err error
	if proto == "tcp" {
		got, err = tcpGet(e.t, path, local, dst, 5*time.Second)
	} else {
		got, err = udpAsk(e.t, path, dst)
	}
	if err != nil || got != want {
		e.t.Errorf("%s: %s %s answered %q, %v; want %q", what, proto, dst, got, err, want)
	}
}

// rulePods reads the host port rules in the node's namespace back and
// returns the names of the pods they are for, sorted, without repeats
// (the table's own rules, the guard and the masquerade of localhost
// connections, are no pod's).
func (e *nodeEnv) rulePods() []string {
	e.t.Helper()
	var names []string
	for _, r := range e.hostPortRules() {
		if r.Pod != "" {
			names = append(names, e.podNames[r.Pod])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// nodeTables lists the nftables tables of the node's namespace.
func (e *nodeEnv) nodeTables() []string {
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
	tables, err := c.ListTables()
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	return names
}

// nodeSysfs reads a file of /sys in the node's namespace.
func (e *nodeEnv) nodeSysfs(path string) string {
	e.t.Helper()
	return strings.TrimSpace(testutil.Run(e.t, "ip", "netns", "exec", e.node, "cat", path))
}

func pm(proto api.Protocol, hostPort int32, hostIP string) *api.PortMapping {
	return &api.PortMapping{Protocol: proto, ContainerPort: 8080, HostPort: hostPort, HostIp: hostIP}
}

const (
	tcp  = api.Protocol_PROTOCOL_TCP
	udp  = api.Protocol_PROTOCOL_UDP
	sctp = api.Protocol_PROTOCOL_SCTP
)

// TestPodnet_HostPorts runs, on a node of its own, the pods of
// Kubernetes' conformance spec "HostPort validates that there is no
// conflict between pods with same hostPort but different hostIP and
// protocol" and more, and checks the traffic from outside the node, from
// the node, from another pod and from the pod itself (hairpin), in both
// families; a conflict that leaves nothing of the refused pod; the
// metrics; StopPodSandbox; Synchronize after a crash of the plugin, which
// takes out the rules of a pod gone meanwhile and restores lost ones; and
// -uninstall.
func TestPodnet_HostPorts(t *testing.T) {
	e := newNodeEnv(t, nil)
	n4, n6 := e.nodeIP4, e.nodeIP6
	ap := netip.AddrPortFrom
	_, _, _ = e.runPod("client")
	_, _, _ = e.runPod("pod1", pm(tcp, 54323, "127.0.0.1"))
	pod2, _, _ := e.runPod("pod2", pm(tcp, 54323, n4.String()))
	pod3, _, _ := e.runPod("pod3", pm(udp, 54323, n4.String()))
	pod4, _, _ := e.runPod("pod4", pm(tcp, 54400, ""), pm(udp, 54400, ""))
	_, _, _ = e.runPod("pod5", pm(tcp, 54401, n6.String()), pm(sctp, 54402, ""), &api.PortMapping{Protocol: tcp, ContainerPort: 9090})
	client, self := e.podPaths["pod-"+e.netPfx+"-client"], e.podPaths[pod4.Id]

	// The conformance spec's three checks, from the node (a hostNetwork
	// pod), and the same from outside.
	e.reach("curl --interface nodeIP http://127.0.0.1:54323/hostname", e.nodePath, "tcp", n4, ap(netip.MustParseAddr("127.0.0.1"), 54323), "pod1")
	e.reach("curl http://nodeIP:54323/hostname", e.nodePath, "tcp", netip.Addr{}, ap(n4, 54323), "pod2")
	e.reach("echo hostname | nc -u -w 5 nodeIP 54323", e.nodePath, "udp", netip.Addr{}, ap(n4, 54323), "pod3")
	e.reach("from outside", e.outPath, "tcp", netip.Addr{}, ap(n4, 54323), "pod2")
	e.reach("from outside", e.outPath, "udp", netip.Addr{}, ap(n4, 54323), "pod3")
	// An empty host IP: every address of both families, from everywhere,
	// the pod itself included; another pod of the bridge gets its reply
	// un-NATed too.
	for _, nodeIP := range []netip.Addr{n4, n6} {
		for _, from := range []struct{ what, path string }{
			{"from outside", e.outPath}, {"from the node", e.nodePath}, {"from another pod", client}, {"from the pod itself (hairpin)", self},
		} {
			for _, proto := range []string{"tcp", "udp"} {
				e.reach(from.what, from.path, proto, netip.Addr{}, ap(nodeIP, 54400), "pod4")
			}
		}
	}
	// The bridge's gateway is a local address too.
	gw4 := netip.MustParsePrefix(e.cfg.Subnets[0]).Addr().Next()
	e.reach("from another pod to the gateway", client, "tcp", netip.Addr{}, ap(gw4, 54400), "pod4")
	// A specific IPv6 host IP.
	e.reach("from outside", e.outPath, "tcp", netip.Addr{}, ap(n6, 54401), "pod5")
	e.reach("from another pod", client, "tcp", netip.Addr{}, ap(n6, 54401), "pod5")
	// A host IP is that destination only: pod2's port is not on IPv6, nor
	// on the gateway.
	if got, err := tcpGet(t, client, netip.Addr{}, ap(gw4, 54323), 2*time.Second); err == nil {
		t.Errorf("pod2's port on the gateway address answered %q", got)
	}
	// A connection from 127.0.0.1 to a host port, on 127.0.0.1 and on
	// every address (CRI's port mapping check); not from ::1 (IPv6 has
	// no route_localnet).
	lo := netip.MustParseAddr("127.0.0.1")
	e.reach("curl http://127.0.0.1:54323/hostname", e.nodePath, "tcp", lo, ap(lo, 54323), "pod1")
	e.reach("curl http://127.0.0.1:54400/hostname", e.nodePath, "tcp", lo, ap(lo, 54400), "pod4")
	e.reach("echo hostname | nc -u 127.0.0.1 54400", e.nodePath, "udp", netip.Addr{}, ap(lo, 54400), "pod4")
	if got, err := tcpGet(t, e.nodePath, netip.IPv6Loopback(), ap(netip.IPv6Loopback(), 54400), time.Second); err == nil {
		t.Errorf("[::1] to [::1]:54400 answered %q; the documentation says it does not", got)
	}

	// Every pod's bridge port is in hairpin mode; the bridge passes
	// bridged traffic to netfilter.
	for id := range e.podNames {
		if _, ok := e.pods[id]; !ok {
			continue
		}
		veth := podnet.HostVethName(id)
		if got := e.nodeSysfs("/sys/class/net/" + veth + "/brport/hairpin_mode"); got != "1" {
			t.Errorf("hairpin mode of %s (pod %s) = %s, want 1", veth, e.podNames[id], got)
		}
	}
	for _, f := range []string{"nf_call_iptables", "nf_call_ip6tables"} {
		if got := e.nodeSysfs("/sys/class/net/" + e.cfg.Bridge + "/bridge/" + f); got != "1" {
			t.Errorf("bridge %s: %s = %s, want 1", e.cfg.Bridge, f, got)
		}
	}

	// A pod asking for what pod1 and pod2 hold (TCP 54323 on every IPv4
	// address) is refused, and nothing of it is left.
	pod6, _, err := e.tryPod("pod6", pm(tcp, 54323, ""))
	if err == nil {
		t.Fatal("RunPodSandbox of a pod asking for a held host port succeeded")
	}
	if !strings.Contains(err.Error(), "default/pod6") || !strings.Contains(err.Error(), "host port tcp *:54323 is held by pod default/pod") ||
		!strings.Contains(err.Error(), `plugin "10-podnet"`) {
		t.Errorf("error %q does not name the plugin, the pod, the port and its holder", err)
	}
	if got := e.rulePods(); !slices.Equal(got, []string{"pod1", "pod2", "pod3", "pod4", "pod5"}) {
		t.Errorf("host port rules of %q, want pod1..pod5", got)
	}
	if out := testutil.Run(t, "ip", "-n", e.node, "-o", "link", "show", "master", e.cfg.Bridge); strings.Contains(out, podnet.HostVethName(pod6.Id)) {
		t.Errorf("the refused pod's veth %s is still on the bridge", podnet.HostVethName(pod6.Id))
	}

	// Metrics: per protocol and family, a mapping for every address of a
	// dual-stack pod counting in both; the conflict.
	_, body := nsGet(t, e.nodePath, e.metrics)
	for _, want := range []string{
		`nrinet_podnet_hostports{family="ipv4",protocol="tcp"} 3`,
		`nrinet_podnet_hostports{family="ipv6",protocol="tcp"} 2`,
		`nrinet_podnet_hostports{family="ipv4",protocol="udp"} 2`,
		`nrinet_podnet_hostports{family="ipv6",protocol="udp"} 1`,
		`nrinet_podnet_hostports{family="ipv4",protocol="sctp"} 1`,
		`nrinet_podnet_hostports{family="ipv6",protocol="sctp"} 1`,
		"nrinet_podnet_hostport_conflicts_total 1",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// StopPodSandbox takes pod2's rules out: its port answers no more.
	if err := e.rt.StopPodSandbox(context.Background(), &api.StopPodSandboxRequest{Pod: pod2}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	delete(e.pods, pod2.Id)
	e.mu.Unlock()
	if got := e.rulePods(); slices.Contains(got, "pod2") {
		t.Errorf("after StopPodSandbox of pod2: rules of %q", got)
	}
	if got, err := tcpGet(t, e.nodePath, netip.Addr{}, ap(n4, 54323), 2*time.Second); err == nil {
		t.Errorf("after StopPodSandbox of pod2, nodeIP:54323 answered %q", got)
	}

	// The plugin crashes; pod3 goes meanwhile. Synchronize takes its
	// rules out and keeps the others.
	e.proc.kill()
	e.mu.Lock()
	delete(e.pods, pod3.Id)
	e.mu.Unlock()
	testutil.DeleteNetNS(e.netPfx + "-pod3")
	e.startNodePlugin()
	if got := e.rulePods(); !slices.Equal(got, []string{"pod1", "pod4", "pod5"}) {
		t.Errorf("after a crash and Synchronize: rules of %q, want pod1, pod4, pod5", got)
	}
	e.reach("after a restart", e.nodePath, "tcp", n4, ap(netip.MustParseAddr("127.0.0.1"), 54323), "pod1")
	// The table is lost while the plugin is down (a firewall reload):
	// Synchronize restores the rules of the live pods.
	e.proc.kill()
	f, err := os.Open(e.nodePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lost, err := hostport.New(hostport.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if err := lost.Uninstall(); err != nil {
		t.Fatal(err)
	}
	e.startNodePlugin()
	if got := e.rulePods(); !slices.Equal(got, []string{"pod1", "pod4", "pod5"}) {
		t.Errorf("after the table was lost and Synchronize: rules of %q, want pod1, pod4, pod5", got)
	}
	e.reach("after the rules were restored", e.outPath, "udp", netip.Addr{}, ap(n6, 54400), "pod4")

	// -uninstall takes the table out with the rest (route_localnet of
	// the bridge first, then the bridge).
	if got := e.routeLocalnet(e.cfg.Bridge); got != "1" {
		t.Errorf("route_localnet of the bridge = %s before -uninstall, want 1", got)
	}
	e.proc.kill()
	if got := e.owners(); slices.Contains(got, pod6.Id) {
		t.Errorf("the refused pod holds addresses: %q", got)
	}
	if out, err := exec.Command("ip", "netns", "exec", e.node, binary, "-uninstall", "-config", e.cfgFile).CombinedOutput(); err != nil {
		t.Fatalf("nri-podnet -uninstall: %v\n%s", err, out)
	}
	if got := e.nodeTables(); len(got) != 0 {
		t.Errorf("after -uninstall the node has tables %q", got)
	}
	if out := testutil.Run(t, "ip", "-n", e.node, "-o", "link", "show"); strings.Contains(out, e.cfg.Bridge) {
		t.Errorf("after -uninstall the bridge %s is left: %s", e.cfg.Bridge, out)
	}
}

// TestPodnet_HostIPNotLocal: a pod asking for a host port on another
// pod's address or a remote one does not start; the error names the pod,
// the host IP and the port, and nothing of the pod is left (no veth, no
// rule, no address); on the node's own address it starts.
func TestPodnet_HostIPNotLocal(t *testing.T) {
	e := newNodeEnv(t, nil)
	_, victim4, victim6 := e.runPod("victim")
	for i, ip := range []string{victim4.String(), victim6.String(), "198.51.100.9"} {
		name := "thief" + strconv.Itoa(i)
		pod, _, err := e.tryPod(name, pm(tcp, 54500, ip))
		if err == nil {
			t.Fatalf("%s with host IP %s started", name, ip)
		}
		for _, s := range []string{"default/" + name, ip, "54500", "not an address of this node"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not say %q", err, s)
			}
		}
		if out, err := exec.Command("ip", "-n", e.node, "-o", "link", "show", podnet.HostVethName(pod.Id)).CombinedOutput(); err == nil {
			t.Errorf("%s's veth left: %s", name, out)
		}
		if out := testutil.Run(t, "ip", "-n", e.netPfx+"-"+name, "-o", "addr", "show", "scope", "global"); out != "" {
			t.Errorf("%s's addresses left: %s", name, out)
		}
	}
	if got := e.rulePods(); len(got) != 0 {
		t.Errorf("rules of %q", got)
	}
	e.runPod("web", pm(tcp, 54500, e.nodeIP4.String()))
	if got := e.rulePods(); !slices.Equal(got, []string{"web"}) {
		t.Errorf("rules of %q, want web", got)
	}
}
