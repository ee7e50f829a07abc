package containerde2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
)

// networkReadyTimeout bounds how long a plugin that (re)connects may take
// until containerd reports NetworkReady: a plugin started by hand retries
// its connection with backoff of at most 5 s.
const networkReadyTimeout = 30 * time.Second

// nriRecord is what the tests read of a pod's NRI network record, which
// containerd in network mode nri shows in its verbose pod status as
// nriNetwork.
type nriRecord = testutil.NRIRecord

// nriStatus is a pod's status in network mode nri: the addresses CRI
// reports and the record behind them.
type nriStatus struct {
	cri    []string
	record nriRecord
}

// nriStatus runs crictl inspectp (verbose: the status is refreshed from
// the plugins, not from nrinet's status cache) and returns the pod's
// addresses and NRI network record.
func (c *containerd) nriStatus(p *pod) nriStatus {
	c.t.Helper()
	out := c.must("inspectp", "-o", "json", p.id)
	// crictl shows each key of the verbose info map at the top level, next
	// to "status" (and "info", the value of the key "info").
	var v struct {
		NRINetwork json.RawMessage `json:"nriNetwork"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		c.t.Fatalf("crictl inspectp %s: %v\n%s", p.name, err, out)
	}
	raw := v.NRINetwork
	if len(raw) == 0 {
		c.t.Fatalf("pod %s: crictl inspectp shows no nriNetwork\n%s", p.name, out)
	}
	// crictl embeds an info value that is JSON as an object, else as a
	// string.
	var str string
	if json.Unmarshal(raw, &str) == nil {
		raw = json.RawMessage(str)
	}
	var s nriStatus
	if err := json.Unmarshal(raw, &s.record); err != nil {
		c.t.Fatalf("pod %s: nriNetwork: %v\n%s", p.name, err, raw)
	}
	var i podInspection
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		c.t.Fatalf("crictl inspectp %s: %v", p.name, err)
	}
	s.cri = i.IPs()
	return s
}

// checkOwned checks a pod's NRI record: its addresses are those CRI
// reports, the plugin owns both families' addresses and eth0, and no part
// is stale.
func (c *containerd) checkOwned(p *pod, plugin string) nriStatus {
	c.t.Helper()
	s := c.nriStatus(p)
	var recIPs []string
	for _, ip := range s.record.Network.IPs {
		if pfx, err := netip.ParsePrefix(ip); err == nil {
			ip = pfx.Addr().String()
		}
		recIPs = append(recIPs, ip)
	}
	if !slices.Equal(recIPs, s.cri) {
		c.t.Errorf("pod %s: NRI record has addresses %v, CRI reports %v", p.name, s.record.Network.IPs, s.cri)
	}
	for _, part := range []string{"ips/ipv4", "ips/ipv6", "interface/eth0"} {
		if got := s.record.Owners[part]; got != plugin {
			c.t.Errorf("pod %s: owner of %s is %q, want %q (owners %v)", p.name, part, got, plugin, s.record.Owners)
		}
	}
	if len(s.record.Stale) > 0 {
		c.t.Errorf("pod %s: stale parts %v, want none", p.name, s.record.Stale)
	}
	return s
}

// networkReady returns crictl info's NetworkReady condition.
func (c *containerd) networkReady() (bool, string) {
	c.t.Helper()
	info, err := parseInfo(c.must("info"))
	if err != nil {
		c.t.Fatal(err)
	}
	return info.networkReady, info.networkMessage
}

// waitNetworkReady polls crictl info until NetworkReady is want.
func (c *containerd) waitNetworkReady(want bool) {
	c.t.Helper()
	if err := testutil.Poll(networkReadyTimeout, 100*time.Millisecond, func() error {
		if got, msg := c.networkReady(); got != want {
			return fmt.Errorf("NetworkReady %v (%s), want %v", got, msg, want)
		}
		return nil
	}); err != nil {
		c.t.Fatal(err)
	}
}

// killRestart kills containerd with SIGKILL (its shims and pods live on)
// and starts it again on the same configuration and state.
func (c *containerd) killRestart() {
	c.t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	<-c.exited
	start := time.Now()
	c.start()
	c.waitReady()
	c.t.Logf("containerd killed and restarted in %v", time.Since(start).Round(time.Millisecond))
}

// runPodFails runs crictl runp for a pod that must fail, and returns the
// error output.
func (c *containerd) runPodFails(name string) string {
	c.t.Helper()
	podFile := c.writeJSON("pod-"+name+".json", map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "nrinet-e2e", "uid": name + "-" + c.token, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(c.dir, "logs", name),
		"linux":         map[string]any{"cgroup_parent": c.cgroupParent},
	})
	out, errOut, err := c.crictl("runp", podFile)
	if err == nil {
		c.seen.add(strings.TrimSpace(out))
		c.t.Fatalf("crictl runp %s succeeded (pod %s), want it to fail", name, strings.TrimSpace(out))
	}
	return errOut
}

// podIDs lists the pod sandboxes containerd has.
func (c *containerd) podIDs() []string {
	c.t.Helper()
	return strings.Fields(c.must("pods", "-q"))
}

// shimRaceLeftSandbox reports whether containerd's log says that its
// cleanup of the failed sandbox id failed because the shim's connection
// closed under it ("failed to delete task: ttrpc: closed"), after which
// containerd marks the sandbox unknown instead of removing it.
func shimRaceLeftSandbox(log, id string) bool {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "encountered an error cleaning up failed sandbox") && strings.Contains(l, id) &&
			strings.Contains(l, "ttrpc: closed") {
			return true
		}
	}
	return false
}

// removePod stops and removes a pod through CRI.
func (c *containerd) removePod(p *pod) {
	c.t.Helper()
	c.must("stopp", p.id)
	c.must("rmp", p.id)
}

// nriPodnet is scenario 2: containerd in network mode nri with no CNI
// configuration, nri-podnet (a separate process on the NRI socket)
// required. Without it NetworkReady is false and a pod fails cleanly;
// with it pods get dual-stack addresses from podnet's subnets, owned by
// it in the record containerd shows, and ping each other. Then: containerd
// killed and restarted keeps every pod's addresses (CRI, record, eth0);
// nri-podnet killed leaves them in place, its part marked stale, and
// NetworkReady false until a new nri-podnet on the same state connects,
// which refreshes the part. Last, the pods are removed through CRI and
// podnet's IPAM must hold no address.
func nriPodnet(c *containerd) []shape {
	t := c.t
	if ready, msg := c.networkReady(); ready {
		t.Errorf("NetworkReady true before the required nri-podnet connected")
	} else if !strings.Contains(msg, "podnet") {
		t.Errorf("NetworkReady false with message %q: want it to name the missing plugin podnet", msg)
	}
	errOut := c.runPodFails("early")
	if !strings.Contains(errOut, "network not ready") || !strings.Contains(errOut, "podnet") {
		t.Errorf("runp without nri-podnet failed with %q; want an error saying the network is not ready and naming podnet", strings.TrimSpace(errOut))
	}
	for _, id := range c.podIDs() {
		// containerd's own cleanup of a failed sandbox can lose a race
		// with the shim's exit (its task delete answers "ttrpc: closed")
		// and then keeps the sandbox in state unknown for the kubelet to
		// remove, with or without NRI: that is containerd's, and logged.
		// Any other sandbox left is a pod nrinet did not undo.
		if shimRaceLeftSandbox(c.log.String(), id) {
			t.Logf("containerd kept sandbox %s in state unknown after its shim exited during the cleanup (containerd's race, not NRI's); removing it", id)
			c.must("rmp", "-f", id)
			continue
		}
		t.Errorf("pod %s left after the failed runp", id)
	}
	t.Logf("without nri-podnet: runp failed: %s", strings.TrimSpace(errOut))

	plug, _, net := podnetPlugin.start(c)
	c.waitNetworkReady(true)
	start := time.Now()
	a := c.runPod("a", "a")
	b := c.runPod("b", "b")
	t.Logf("two pods running in %v", time.Since(start).Round(time.Millisecond))
	shapes := c.checkPods(net, a, b)
	if t.Failed() {
		return shapes
	}
	pods := []*pod{a, b}
	before := map[string]nriStatus{}
	eth0 := map[string][]netip.Prefix{}
	for _, p := range pods {
		before[p.name] = c.checkOwned(p, podnetPlugin.name)
		eth0[p.name] = c.podNetwork(p).addrs
		t.Logf("pod %s: %v, owners %v", p.name, before[p.name].cri, before[p.name].record.Owners)
	}

	// containerd killed: the pods keep their addresses across its restart.
	c.killRestart()
	c.waitNetworkReady(true) // nri-podnet reconnected
	for _, p := range pods {
		s := c.checkOwned(p, podnetPlugin.name)
		if !slices.Equal(s.cri, before[p.name].cri) {
			t.Errorf("pod %s: addresses %v after containerd's restart, %v before", p.name, s.cri, before[p.name].cri)
		}
		if got := c.podNetwork(p).addrs; !slices.Equal(got, eth0[p.name]) {
			t.Errorf("pod %s: eth0 has %v after containerd's restart, %v before", p.name, got, eth0[p.name])
		}
	}
	c.ping(a, netip.MustParseAddr(before["b"].cri[0]))
	c.ping(b, netip.MustParseAddr(before["a"].cri[1]))

	// nri-podnet killed: the addresses stay, its part is stale and the
	// network not ready until it is back.
	plug.Kill()
	c.waitNetworkReady(false)
	for _, p := range pods {
		s := c.nriStatus(p)
		if !slices.Equal(s.cri, before[p.name].cri) {
			t.Errorf("pod %s: addresses %v with nri-podnet down, %v before", p.name, s.cri, before[p.name].cri)
		}
		if _, ok := s.record.Stale[podnetPlugin.name]; !ok {
			t.Errorf("pod %s: with nri-podnet down its part is not marked stale (stale %v)", p.name, s.record.Stale)
		} else {
			t.Logf("pod %s with nri-podnet down: %v, stale %v", p.name, s.cri, s.record.Stale)
		}
		if !maps.Equal(s.record.Owners, before[p.name].record.Owners) {
			t.Errorf("pod %s: owners %v with nri-podnet down, %v before", p.name, s.record.Owners, before[p.name].record.Owners)
		}
	}
	c.ping(a, netip.MustParseAddr(before["b"].cri[1]))
	podnetPlugin.restart(c)
	c.waitNetworkReady(true)
	for _, p := range pods {
		s := c.checkOwned(p, podnetPlugin.name)
		if !slices.Equal(s.cri, before[p.name].cri) {
			t.Errorf("pod %s: addresses %v after nri-podnet came back, %v before", p.name, s.cri, before[p.name].cri)
		}
	}

	// Removed through CRI, the pods leave no address in podnet's IPAM.
	for _, p := range pods {
		c.removePod(p)
	}
	for _, p := range c.plugins {
		p.Stop(pluginTimeout)
	}
	c.checkPodnetIPAM(net)
	return shapes
}

// restart starts nri-podnet again on the configuration and state the
// first start wrote.
func (np netPlugin) restart(c *containerd) *pluginProc {
	c.t.Helper()
	return c.startPlugin(np.name, env.podnet, "-config", filepath.Join(c.dir, "podnet.json"),
		"-socket", c.nriSock, "-idx", "10", "-name", "podnet")
}

// checkPodnetIPAM opens nri-podnet's allocator database (the plugin has
// stopped) and checks that it holds no allocation.
func (c *containerd) checkPodnetIPAM(net ipNet) {
	c.t.Helper()
	path := filepath.Join(c.dir, "podnet", "ipam.db")
	a, err := ipam.Open(path, ipam.Config{Subnets: []netip.Prefix{net.v4, net.v6}})
	if err != nil {
		c.t.Errorf("opening nri-podnet's IPAM %s: %v", path, err)
		return
	}
	defer a.Close()
	allocs, err := a.Allocations()
	if err != nil {
		c.t.Errorf("nri-podnet's IPAM %s: %v", path, err)
		return
	}
	if len(allocs) > 0 {
		c.t.Errorf("nri-podnet's IPAM holds %d allocations after every pod was removed: %v", len(allocs), allocs)
	}
}

// nriCNI is scenario 3: containerd in network mode nri, no CNI
// configuration of its own; nri-cni (required), a separate process on the
// NRI socket, runs a bridge conflist written as the baseline's (same
// plugins and settings, subnets and bridge of its own). The pods' networks
// must have the baseline's shape (addresses, prefix lengths, interfaces,
// default routes), be owned by nri-cni in containerd's record, and the
// pods ping each other.
func nriCNI(c *containerd) []shape {
	t := c.t
	_, _, net := cniPlugin.start(c)
	c.waitNetworkReady(true)
	start := time.Now()
	a := c.runPod("a", "a")
	b := c.runPod("b", "b")
	t.Logf("two pods running in %v", time.Since(start).Round(time.Millisecond))
	shapes := c.checkPods(net, a, b)
	for _, p := range []*pod{a, b} {
		s := c.checkOwned(p, cniPlugin.name)
		t.Logf("pod %s: %v, owners %v", p.name, s.cri, s.record.Owners)
	}
	return shapes
}
