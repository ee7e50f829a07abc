package crioe2e

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// skipUnlessEnabled skips unless the suite runs as root with gateEnv set.
func skipUnlessEnabled(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(gateEnv) == "" {
		t.Skipf("needs root and %s=1 (make e2e-crio)", gateEnv)
	}
}

// TestCNIMode: stock CRI-O with its CNI bridge network (the baseline),
// and CRI-O on nrinet in network_mode "cni" give pods the same shape:
// one address in each of the network's subnets, on eth0, reachable from
// the other pod; no NRI record is shown.
func TestCNIMode(t *testing.T) {
	skipUnlessEnabled(t)
	for _, tc := range []struct{ name, nri, mode string }{
		{"stock", "upstream", ""},
		{"nrinet", "compat", "cni"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCrio(t, crioOptions{nri: tc.nri, mode: tc.mode})
			c.waitNetworkReady(true)
			a, b := c.runPod("a"), c.runPod("b")
			want := []netip.Prefix{c.cni.v4, c.cni.v6}
			ipsA, ipsB := c.checkNet(a, want...), c.checkNet(b, want...)
			c.ping(a, ipsB)
			c.ping(b, ipsA)
			if tc.mode != "" {
				i := c.inspect(a)
				if i.NetworkMode != "cni" || len(i.NRINetwork) > 0 {
					t.Errorf("pod a: networkMode %q, nriNetwork %s; want cni and none", i.NetworkMode, i.NRINetwork)
				}
			}
			c.removePod(a)
			c.removePod(b)
			c.checkRemoved()
		})
	}
}

// TestNRIModePodnet: CRI-O on nrinet in network_mode "nri" with no CNI
// configuration in use and nri-podnet required. Without it NetworkReady
// is false and a pod fails naming it; with it pods get dual-stack
// addresses from podnet's subnets (owned by it in the record CRI-O shows,
// not from CRI-O's CNI network) and ping each other, and a host-network
// pod gets none (nor a record). CRI-O killed and
// restarted keeps every pod's addresses (from the kept record), and so
// does nri-podnet killed (its part stale) and restarted. Pods removed
// through CRI leave nothing behind.
func TestNRIModePodnet(t *testing.T) {
	skipUnlessEnabled(t)
	c := startCrio(t, crioOptions{nri: "compat", mode: "nri", required: []string{"podnet"}})
	if ready, msg := c.networkReady(); ready || !strings.Contains(msg, "podnet") {
		t.Errorf("NetworkReady %v (%q) before nri-podnet connected; want false, naming podnet", ready, msg)
	}
	if errOut := c.runPodFails("early"); !strings.Contains(errOut, "podnet") {
		t.Errorf("runp without nri-podnet failed with %q; want an error naming podnet", strings.TrimSpace(errOut))
	}

	plug, subnets := c.startPodnet()
	c.waitNetworkReady(true)
	a, b := c.runPod("a"), c.runPod("b")
	before := map[string][]string{}
	for _, p := range []*pod{a, b} {
		before[p.name] = c.checkNet(p, subnets...)
		c.checkRecord(p, before[p.name], "10-podnet", false)
	}
	c.ping(a, before["b"])
	c.ping(b, before["a"])

	// A host-network pod: no NRI network, no record, the host's
	// interfaces; nri-podnet wires nothing for it.
	h := c.runHostNetworkPod("host")
	if i := c.inspect(h); len(i.IPs()) > 0 || len(i.NRINetwork) > 0 {
		t.Errorf("host-network pod: addresses %v, nriNetwork %s; want none", i.IPs(), i.NRINetwork)
	}
	c.removePod(h)

	c.killRestart()
	c.waitNetworkReady(true)
	for _, p := range []*pod{a, b} {
		if got := c.checkNet(p, subnets...); !slices.Equal(got, before[p.name]) {
			t.Errorf("pod %s: addresses %v after CRI-O restarted, %v before", p.name, got, before[p.name])
		}
		c.checkRecord(p, before[p.name], "10-podnet", false)
	}
	c.ping(a, before["b"])

	plug.Kill()
	c.waitNetworkReady(false)
	for _, p := range []*pod{a, b} {
		if got := c.inspect(p).IPs(); !slices.Equal(got, before[p.name]) {
			t.Errorf("pod %s: addresses %v with nri-podnet down, %v before", p.name, got, before[p.name])
		}
		c.checkRecord(p, before[p.name], "10-podnet", true)
	}
	c.restartPodnet(plug.Cmd.Args[2])
	c.waitNetworkReady(true)
	for _, p := range []*pod{a, b} {
		c.checkRecord(p, before[p.name], "10-podnet", false)
	}
	c.ping(b, before["a"])

	c.removePod(a)
	c.removePod(b)
	c.checkRemoved()
}

// TestNRIModeCNIPlugin: network_mode "nri" with nri-cni, the same binary
// as for containerd, on a bridge conflist of its own: pods get its
// addresses and ping each other; a pod removed without a stop is
// released too.
func TestNRIModeCNIPlugin(t *testing.T) {
	skipUnlessEnabled(t)
	c := startCrio(t, crioOptions{nri: "compat", mode: "nri", required: []string{"cni"}})
	_, subnets := c.startNRICNI()
	c.waitNetworkReady(true)
	a, b := c.runPod("a"), c.runPod("b")
	ipsA, ipsB := c.checkNet(a, subnets...), c.checkNet(b, subnets...)
	c.checkRecord(a, ipsA, "10-cni", false)
	c.ping(a, ipsB)
	c.ping(b, ipsA)
	c.removePod(a)
	// Removed without a stop, b's network is still released through
	// nri-cni (the leak check finds no host-local allocation left).
	c.forceRemovePod(b)
	c.checkRemoved()
}

// TestPodnetRefusesStockCrio: nri-podnet connected to stock CRI-O refuses
// to run without nrinet's pod network extension, naming itself and the
// extension, and pods keep CRI-O's CNI network.
func TestPodnetRefusesStockCrio(t *testing.T) {
	skipUnlessEnabled(t)
	c := startCrio(t, crioOptions{nri: "upstream"})
	p, _ := c.startPodnet()
	switch {
	case !p.WaitExit(pluginTimeout):
		t.Errorf("nri-podnet still runs against stock CRI-O; want it to refuse")
	case p.Cmd.ProcessState.ExitCode() <= 0 || !strings.Contains(p.Stderr.String(), "pod network extension") || !strings.Contains(p.Stderr.String(), "podnet"):
		t.Errorf("nri-podnet exited with %v; want non-zero and an error naming it and the pod network extension\n%s", p.Cmd.ProcessState, p.Stderr)
	default:
		t.Logf("nri-podnet refused: %s", strings.TrimSpace(p.Stderr.String()))
	}
	c.waitNetworkReady(true)
	a := c.runPod("a")
	c.checkNet(a, c.cni.v4, c.cni.v6)
	c.removePod(a)
}

// waitFresh waits until the pod's NRI record, as CRI-O's verbose status
// shows it, has plugin's part fresh (not stale): the plugin is connected
// and answered the status round.
func (c *crio) waitFresh(p *pod, plugin string) {
	c.t.Helper()
	err := testutil.Poll(readyTimeout, 100*time.Millisecond, func() error {
		rec, ok, err := c.inspect(p).Record()
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("pod %s has no NRI record", p.name)
		}
		if why, stale := rec.Stale[plugin]; stale {
			return fmt.Errorf("pod %s: %s's part is stale: %s", p.name, plugin, why)
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// checkRecord checks a pod's NRI record as CRI-O's verbose status shows
// it: mode nri, the addresses CRI reports, the plugin owning both
// families' addresses and eth0, and its part stale or not.
func (c *crio) checkRecord(p *pod, ips []string, plugin string, stale bool) {
	c.t.Helper()
	i := c.inspect(p)
	rec, ok, err := i.Record()
	if err != nil || !ok {
		c.t.Fatalf("pod %s: nriNetwork %s: %v", p.name, i.NRINetwork, err)
	}
	if i.NetworkMode != "nri" {
		c.t.Errorf("pod %s: networkMode %q, want nri", p.name, i.NetworkMode)
	}
	var recIPs []string
	for _, ip := range rec.Network.IPs {
		if pfx, err := netip.ParsePrefix(ip); err == nil {
			ip = pfx.Addr().String()
		}
		recIPs = append(recIPs, ip)
	}
	if !slices.Equal(recIPs, ips) || !slices.Equal(i.IPs(), ips) {
		c.t.Errorf("pod %s: record %v, CRI %v; want %v", p.name, rec.Network.IPs, i.IPs(), ips)
	}
	for _, part := range []string{"ips/ipv4", "ips/ipv6", "interface/eth0"} {
		if got := rec.Owners[part]; got != plugin {
			c.t.Errorf("pod %s: owner of %s is %q, want %q (owners %v)", p.name, part, got, plugin, rec.Owners)
		}
	}
	if _, isStale := rec.Stale[plugin]; isStale != stale {
		c.t.Errorf("pod %s: stale parts %v; want %s stale: %v", p.name, rec.Stale, plugin, stale)
	}
}

// TestModeSwitch: CRI-O on nrinet switched from network_mode "nri" to
// "cni" (a restart with the other configuration) with a pod of mode nri
// running: that pod keeps its addresses and its mode, nri-podnet still
// joins (CRI-O keeps the pod network extension on while such a pod
// remains), a new pod gets CRI-O's CNI network and reaches the old one;
// both are removed, each through its own mode (the leak check finds no
// address left in nri-podnet's allocator or host-local's).
func TestModeSwitch(t *testing.T) {
	skipUnlessEnabled(t)
	c := startCrio(t, crioOptions{nri: "compat", mode: "nri", required: []string{"podnet"}})
	plug, subnets := c.startPodnet()
	c.waitNetworkReady(true)
	a := c.runPod("a")
	ipsA := c.checkNet(a, subnets...)

	c.stop()
	c.opts = crioOptions{nri: "compat", mode: "cni"}
	c.writeConfig()
	c.start()
	c.waitNetworkReady(true)
	if got := c.checkNet(a, subnets...); !slices.Equal(got, ipsA) {
		t.Errorf("pod a: addresses %v after the switch to cni, %v before", got, ipsA)
	}
	// In mode cni, NetworkReady does not wait for nri-podnet, which
	// reconnects with backoff: wait until it joined again, then its part
	// is not stale.
	c.waitFresh(a, "10-podnet")
	c.checkRecord(a, ipsA, "10-podnet", false)
	if !plug.Running() {
		t.Fatalf("nri-podnet exited after the switch (%v); it must still join while a pod of mode nri remains:\n%s", plug.Cmd.ProcessState, plug.Stderr)
	}

	b := c.runPod("b")
	ipsB := c.checkNet(b, c.cni.v4, c.cni.v6)
	if i := c.inspect(b); i.NetworkMode != "cni" || len(i.NRINetwork) > 0 {
		t.Errorf("pod b: networkMode %q, nriNetwork %s; want cni and none", i.NetworkMode, i.NRINetwork)
	}
	c.ping(b, ipsA[:1])
	c.ping(a, ipsB[:1])
	c.removePod(a)
	c.removePod(b)
	c.checkRemoved()
}
