package containerde2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// Scenario 6: a node switched between the CRI network modes with pods
// running. Each pod keeps the network of the mode that set it up, until
// it is removed: its addresses, its status, and the teardown of that mode
// (CNI DEL, or the NRI plugins' StopPodSandbox).

// modeSwitch is scenario 6, on one containerd on nrinet, its CNI
// configuration (the suite's bridge conflist) kept in every mode:
//
//  1. in network mode cni, pods c1 and c2 run on the CNI network;
//  2. containerd is restarted in network mode nri, and nri-podnet
//     (required) started; c1 and c2 keep their addresses and are reported as CNI's,
//     new pods n1 and n2 get nri-podnet's network, and old and new pods
//     ping each other across the two bridges, routed by the host;
//  3. c1 and c2 are removed: CNI DEL ran (host-local's leases freed, the
//     CNI result caches gone, the veths gone), nothing of them is left,
//     and n1 and n2 still ping each other;
//  4. n1 and n2 are removed: nothing of them is left, and nri-podnet's
//     allocator is empty;
//  5. pods n3 and n4 run in network mode nri, then nri-podnet is killed
//     and containerd restarted in network mode cni: n3 and n4 keep their
//     addresses, reported from the record containerd kept, with
//     nri-podnet's part stale; nri-podnet started again joins containerd
//     in cni mode and the records are current again; new pods c3 and c4
//     get the CNI network (nri-podnet wires nothing for them) and old and
//     new pods ping each other;
//  6. n3 and n4 are removed: nri-podnet released them (its allocator is
//     empty), nothing of them is left; then c3 and c4: CNI DEL ran, and
//     nothing of them is left.
//
// After each removal the leak check runs on the removed pods (checkRemoved);
// the instance's cleanup runs the whole leak check at the end.
func modeSwitch(c *containerd) []shape {
	t := c.t
	cni := c.cni.ipNet

	// 1. CNI mode.
	c1, c2 := c.runPod("c1", "c1"), c.runPod("c2", "c2")
	c.checkPods(cni, c1, c2)
	if t.Failed() {
		return nil
	}
	old := c.networks(c1, c2)
	c.checkMode(criNetworkModeCNI, c1, c2)

	// 2. NRI mode, nri-podnet required; the CNI pods run on. nri-podnet
	// starts once containerd is in NRI mode: containerd in CNI mode with
	// no pod of NRI mode would refuse it, and it would exit.
	c.switchNetworkMode(networkNRI, "podnet")
	plug, _, pnet := podnetPlugin.start(c)
	c.waitNetworkReady(true)
	c.checkKept(old, c1, c2)
	c.checkMode(criNetworkModeCNI, c1, c2)
	n1, n2 := c.runPod("n1", "n1"), c.runPod("n2", "n2")
	c.checkPods(pnet, n1, n2)
	c.checkMode(criNetworkModeNRI, n1, n2)
	for _, p := range []*pod{n1, n2} {
		c.checkOwned(p, podnetPlugin.name)
	}
	c.checkForwarding()
	c.pingAcross([]*pod{c1, c2}, []*pod{n1, n2})

	// 3. The CNI pods removed in NRI mode: CNI tears them down.
	for _, p := range []*pod{c1, c2} {
		c.removePod(p)
	}
	c.checkCNIReleased(old, c1, c2)
	c.checkRemoved(c1, c2)
	c.pingAll(n1, n2)

	// 4. The NRI pods removed: nri-podnet releases their addresses.
	for _, p := range []*pod{n1, n2} {
		c.removePod(p)
	}
	c.checkRemoved(n1, n2)
	plug.Stop(pluginTimeout)
	c.checkPodnetIPAM(pnet)

	// 5. NRI pods running, nri-podnet gone, containerd back in CNI mode.
	plug = podnetPlugin.restart(c)
	c.waitNetworkReady(true)
	n3, n4 := c.runPod("n3", "n3"), c.runPod("n4", "n4")
	c.checkPods(pnet, n3, n4)
	recs := map[string]nriStatus{}
	for _, p := range []*pod{n3, n4} {
		recs[p.name] = c.checkOwned(p, podnetPlugin.name)
	}
	old = c.networks(n3, n4)
	plug.Kill()
	c.switchNetworkMode(networkCNI)
	c.checkMode(criNetworkModeNRI, n3, n4)
	for _, p := range []*pod{n3, n4} {
		// From the record containerd kept: nri-podnet is not connected.
		s := c.nriStatus(p)
		if !slices.Equal(s.cri, recs[p.name].cri) {
			t.Errorf("pod %s: addresses %v in CNI mode with nri-podnet gone, %v before", p.name, s.cri, recs[p.name].cri)
		}
		if !maps.Equal(s.record.Owners, recs[p.name].record.Owners) {
			t.Errorf("pod %s: owners %v in CNI mode with nri-podnet gone, %v before", p.name, s.record.Owners, recs[p.name].record.Owners)
		}
		if _, ok := s.record.Stale[podnetPlugin.name]; !ok {
			t.Errorf("pod %s: with nri-podnet gone its part is not marked stale (stale %v)", p.name, s.record.Stale)
		} else {
			t.Logf("pod %s in CNI mode with nri-podnet gone: %v, stale %v", p.name, s.cri, s.record.Stale)
		}
	}
	c.checkKept(old, n3, n4)
	plug = podnetPlugin.restart(c)
	c.waitCurrent(plug, n3, n4)
	for _, p := range []*pod{n3, n4} {
		s := c.checkOwned(p, podnetPlugin.name)
		if !slices.Equal(s.cri, recs[p.name].cri) {
			t.Errorf("pod %s: addresses %v in CNI mode with nri-podnet back, %v before", p.name, s.cri, recs[p.name].cri)
		}
	}
	c3, c4 := c.runPod("c3", "c3"), c.runPod("c4", "c4")
	c.checkPods(cni, c3, c4)
	c.checkMode(criNetworkModeCNI, c3, c4)
	for _, p := range []*pod{c3, c4} {
		if slices.ContainsFunc(p.veths, func(v string) bool { return slices.Contains(bridgePorts(t, "nrpn"+c.token), v) }) {
			t.Errorf("pod %s (CNI mode) has a veth on nri-podnet's bridge: %v", p.name, p.veths)
		}
	}
	newCNI := c.networks(c3, c4)
	c.pingAcross([]*pod{n3, n4}, []*pod{c3, c4})

	// 6. The NRI pods removed in CNI mode: nri-podnet releases them; then
	// the CNI pods: CNI tears them down.
	for _, p := range []*pod{n3, n4} {
		c.removePod(p)
	}
	c.checkRemoved(n3, n4)
	plug.Stop(pluginTimeout)
	c.checkPodnetIPAM(pnet)
	c.pingAll(c3, c4)
	for _, p := range []*pod{c3, c4} {
		c.removePod(p)
	}
	c.checkCNIReleased(newCNI, c3, c4)
	c.checkRemoved(c3, c4)
	return nil
}

// The values of the verbose pod status's networkMode.
const (
	criNetworkModeCNI = "cni"
	criNetworkModeNRI = "nri"
)

// switchNetworkMode stops containerd (SIGTERM: its pods run on), rewrites
// its configuration for network mode n (nri: with the required network
// plugins; the CNI configuration stays) and starts it again on the same
// state.
func (c *containerd) switchNetworkMode(n network, required ...string) {
	c.t.Helper()
	start := time.Now()
	c.stop()
	c.opts.network, c.opts.requiredNetworkPlugins = n, required
	c.writeFile(c.config, c.configTOML())
	c.start()
	c.waitReady()
	mode := criNetworkModeCNI
	if n == networkNRI {
		mode = criNetworkModeNRI
	}
	c.t.Logf("containerd restarted in network mode %s in %v", mode, time.Since(start).Round(time.Millisecond))
}

// checkMode checks that crictl inspectp reports each pod's network mode
// (verbose info networkMode) as mode, and containerd's NRI network record
// (nriNetwork) for the pods of network mode nri only.
func (c *containerd) checkMode(mode string, pods ...*pod) {
	c.t.Helper()
	for _, p := range pods {
		out := c.must("inspectp", "-o", "json", p.id)
		var v struct {
			NetworkMode string          `json:"networkMode"`
			NRINetwork  json.RawMessage `json:"nriNetwork"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			c.t.Fatalf("crictl inspectp %s: %v\n%s", p.name, err, out)
		}
		if v.NetworkMode != mode {
			c.t.Errorf("pod %s: crictl inspectp shows networkMode %q, want %q", p.name, v.NetworkMode, mode)
		}
		if has := len(v.NRINetwork) > 0; has != (mode == criNetworkModeNRI) {
			c.t.Errorf("pod %s (network mode %s): crictl inspectp shows nriNetwork %s", p.name, mode, v.NRINetwork)
		}
	}
}

// networks reads the pods' networks (CRI addresses, eth0), by pod name.
func (c *containerd) networks(pods ...*pod) map[string]podNet {
	c.t.Helper()
	out := map[string]podNet{}
	for _, p := range pods {
		out[p.name] = c.podNetwork(p)
	}
	return out
}

// checkKept checks that the pods report the addresses they had, through
// CRI and on eth0.
func (c *containerd) checkKept(before map[string]podNet, pods ...*pod) {
	c.t.Helper()
	for _, p := range pods {
		got, want := c.podNetwork(p), before[p.name]
		if !slices.Equal(got.cri, want.cri) {
			c.t.Errorf("pod %s: CRI reports %v, %v before", p.name, got.cri, want.cri)
		}
		if !slices.Equal(got.addrs, want.addrs) {
			c.t.Errorf("pod %s: eth0 has %v, %v before", p.name, got.addrs, want.addrs)
		}
	}
}

// checkForwarding checks that the host forwards both families, which the
// pods of the two bridges need to reach each other: each pod's default
// route is its own bridge's gateway, a host address, and the host routes
// between the bridges' subnets. The CNI bridge plugin turns forwarding on
// for a gateway bridge (isGateway), as Kubernetes nodes have it anyway.
func (c *containerd) checkForwarding() {
	c.t.Helper()
	for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
		b, err := os.ReadFile(f)
		if err != nil || strings.TrimSpace(string(b)) != "1" {
			c.t.Errorf("%s is %q (%v): the host does not forward, so pods of two bridges cannot reach each other", f, strings.TrimSpace(string(b)), err)
		}
	}
}

// pingAcross pings, in both directions and both families, between every
// pod of a and every pod of b.
func (c *containerd) pingAcross(a, b []*pod) {
	c.t.Helper()
	addrs := map[*pod][]netip.Addr{}
	for _, p := range append(slices.Clone(a), b...) {
		addrs[p] = c.podNetwork(p).cri
	}
	for _, x := range a {
		for _, y := range b {
			for _, ip := range addrs[y] {
				c.ping(x, ip)
			}
			for _, ip := range addrs[x] {
				c.ping(y, ip)
			}
		}
	}
}

// pingAll pings, in both families, between every two of the pods.
func (c *containerd) pingAll(pods ...*pod) {
	c.t.Helper()
	for i, p := range pods {
		for j, q := range pods {
			if i != j {
				for _, ip := range c.podNetwork(q).cri {
					c.ping(p, ip)
				}
			}
		}
	}
}

// checkCNIReleased checks that CNI DEL ran for removed pods of the CNI
// network: host-local freed their addresses (no lease file named after
// one) and libcni removed their result caches.
func (c *containerd) checkCNIReleased(nets map[string]podNet, pods ...*pod) {
	c.t.Helper()
	for _, p := range pods {
		for _, a := range nets[p.name].cri {
			lease := filepath.Join(c.cni.dataDir, c.cni.name, a.String())
			if _, err := os.Stat(lease); !errors.Is(err, fs.ErrNotExist) {
				c.t.Errorf("pod %s removed: host-local's lease %s is still there (%v): no CNI DEL", p.name, lease, err)
			}
		}
		for _, name := range []string{c.cni.name + "-" + p.id + "-eth0", "cni-loopback-" + p.id + "-lo"} {
			cache := filepath.Join(cniResultsDir, name)
			if _, err := os.Stat(cache); !errors.Is(err, fs.ErrNotExist) {
				c.t.Errorf("pod %s removed: CNI result cache %s is still there (%v): no CNI DEL", p.name, cache, err)
			}
		}
	}
}

// settleTimeout bounds how long checkRemoved waits for what goes away
// on its own shortly after a pod's removal returned: nri-podnet deletes a
// pod's host veth in the background, and the kernel tears down a removed
// network namespace (and the veths in it) asynchronously.
const settleTimeout = 3 * time.Second

// checkRemoved is the leak check of removed pods while the instance and
// its other pods run on: nothing of theirs may be left (processes, mounts,
// network namespaces, host veths, shim sockets, CNI result caches,
// cgroups), settleTimeout after their removal. A leak fails the test and
// is removed, as the instance's cleanup would.
func (c *containerd) checkRemoved(pods ...*pod) {
	c.t.Helper()
	s := podsScope(pods...)
	var leaks []leak
	// What is still there after settleTimeout is reported below.
	testutil.Poll(settleTimeout, 50*time.Millisecond, func() error {
		if leaks = s.leaks(c.before, takeSnapshot()); len(leaks) > 0 {
			return errors.New("leaks left")
		}
		return nil
	})
	for _, l := range leaks {
		c.t.Errorf("left behind by removed pods %s: %s", podNames(pods), l)
		if err := l.remove(); err != nil {
			c.t.Errorf("removing %s: %v", l, err)
		}
	}
}

func podNames(pods []*pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// waitCurrent waits until nri-podnet (plug), started again, has joined
// containerd and each pod's record is current: its part no longer stale.
// In network mode cni NetworkReady does not say whether it joined.
func (c *containerd) waitCurrent(plug *pluginProc, pods ...*pod) {
	c.t.Helper()
	current := 0 // pods[:current] are current
	err := testutil.Poll(networkReadyTimeout, 100*time.Millisecond, func() error {
		for ; current < len(pods); current++ {
			select {
			case <-plug.Exited():
				return testutil.Abort(fmt.Errorf("nri-podnet exited (%v) instead of joining containerd in network mode cni\nstderr:\n%s", plug.Cmd.ProcessState, plug.Stderr))
			default:
			}
			p := pods[current]
			if s := c.nriStatus(p); len(s.record.Stale) > 0 {
				return fmt.Errorf("pod %s: record still stale (%v) after nri-podnet started again", p.name, s.record.Stale)
			}
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("nri-podnet joined containerd in network mode cni: the records of %s are current", podNames(pods))
}
