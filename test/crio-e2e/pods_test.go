package crioe2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/internal/testutil"
)

// pod is a pod sandbox with one busybox container that sleeps.
type pod struct {
	name, id, ctr string
}

// podConfig is the CRI configuration of the pod name.
func (c *crio) podConfig(name string) map[string]any {
	return map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "nrinet-e2e", "uid": name + "-" + c.token, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(c.dir, "logs", name),
		"linux":         map[string]any{"cgroup_parent": c.cgroup},
	}
}

// runPod runs a pod and its container, pulling the busybox image first.
func (c *crio) runPod(name string) *pod {
	return c.runPodWith(name, c.podConfig(name))
}

// runHostNetworkPod runs a host-network pod and its container.
func (c *crio) runHostNetworkPod(name string) *pod {
	cfg := c.podConfig(name)
	cfg["linux"].(map[string]any)["security_context"] = map[string]any{"namespace_options": map[string]any{"network": 2}} // NODE
	return c.runPodWith(name, cfg)
}

// runPodWith runs a pod of configuration cfg and its container.
func (c *crio) runPodWith(name string, cfg map[string]any) *pod {
	c.t.Helper()
	c.must("pull", env.busyboxRef)
	podFile := c.writeJSON("pod-"+name+".json", cfg)
	ctrFile := c.writeJSON("ctr-"+name+".json", map[string]any{
		"metadata": map[string]any{"name": name},
		"image":    map[string]any{"image": env.busyboxRef},
		"command":  []string{"sleep", "3600"},
		"log_path": name + ".log",
		// CRI-O's default capabilities lack NET_RAW, which ping needs.
		"linux": map[string]any{"security_context": map[string]any{"capabilities": map[string]any{"add_capabilities": []string{"NET_RAW"}}}},
	})
	p := &pod{name: name}
	p.id = c.must("runp", podFile)
	p.ctr = c.must("create", p.id, ctrFile, podFile)
	c.must("start", p.ctr)
	return p
}

// runPodFails runs a pod that must not start, and returns crictl's error.
func (c *crio) runPodFails(name string) string {
	c.t.Helper()
	podFile := c.writeJSON("pod-"+name+".json", c.podConfig(name))
	out, errOut, err := c.crictl("runp", podFile)
	if err == nil {
		c.t.Fatalf("crictl runp %s succeeded (pod %s), want it to fail", name, strings.TrimSpace(out))
	}
	return errOut
}

// removePod stops and removes a pod through CRI, as the kubelet does.
func (c *crio) removePod(p *pod) {
	c.t.Helper()
	c.must("stopp", p.id)
	c.must("rmp", p.id)
}

// inspection is what the suite reads of crictl inspectp.
type inspection = testutil.PodStatus

// inspect runs crictl inspectp (verbose).
func (c *crio) inspect(p *pod) inspection {
	c.t.Helper()
	out := c.must("inspectp", "-o", "json", p.id)
	var i inspection
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		c.t.Fatalf("crictl inspectp %s: %v\n%s", p.name, err, out)
	}
	return i
}

// checkNet checks that the pod has one address in each of want's
// subnets, that its eth0 has them, and returns them.
func (c *crio) checkNet(p *pod, want ...netip.Prefix) []string {
	c.t.Helper()
	ips := c.inspect(p).IPs()
	if len(ips) != len(want) {
		c.t.Fatalf("pod %s: addresses %v, want one in each of %v", p.name, ips, want)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil || !slices.ContainsFunc(want, func(w netip.Prefix) bool { return w.Contains(a) }) {
			c.t.Errorf("pod %s: address %s not in %v", p.name, ip, want)
		}
	}
	eth0 := c.exec(p, "ip", "addr", "show", "eth0")
	for _, ip := range ips {
		if !strings.Contains(eth0, ip+"/") {
			c.t.Errorf("pod %s: eth0 lacks %s:\n%s", p.name, ip, eth0)
		}
	}
	return ips
}

// exec runs cmd in the pod's container.
func (c *crio) exec(p *pod, cmd ...string) string {
	c.t.Helper()
	return c.must(append([]string{"exec", p.ctr}, cmd...)...)
}

// ping checks that from reaches each address of to.
func (c *crio) ping(from *pod, to []string) {
	c.t.Helper()
	for _, ip := range to {
		if out, errOut, err := c.crictl("exec", from.ctr, "ping", "-c", "1", "-W", "5", ip); err != nil {
			c.t.Errorf("pod %s cannot ping %s: %v\n%s%s", from.name, ip, err, out, errOut)
		}
	}
}

// networkReady returns crictl info's NetworkReady condition.
func (c *crio) networkReady() (bool, string) {
	c.t.Helper()
	info, err := testutil.ParseRuntimeStatus([]byte(c.must("info")))
	if err != nil {
		c.t.Fatal(err)
	}
	ready, _, msg, found := info.Condition("NetworkReady")
	if !found {
		c.t.Fatal("crictl info shows no NetworkReady condition")
	}
	return ready, msg
}

// waitNetworkReady waits until NetworkReady is want.
func (c *crio) waitNetworkReady(want bool) {
	c.t.Helper()
	testutil.WaitFor(c.t, fmt.Sprintf("NetworkReady %v", want), netTimeout, func() bool {
		got, _ := c.networkReady()
		return got == want
	})
}

// startPlugin starts an NRI plugin as a separate process; c's cleanup
// stops it.
func (c *crio) startPlugin(name, bin string, args ...string) *testutil.Proc {
	c.t.Helper()
	p, err := testutil.StartProc(name, bin, args...)
	if err != nil {
		c.t.Fatalf("plugin %s: %v", name, err)
	}
	c.plugins = append(c.plugins, p)
	return p
}

// startPodnet starts nri-podnet (10-podnet) with a bridge and dual-stack
// subnets of its own, its state under c.dir.
func (c *crio) startPodnet() (*testutil.Proc, []netip.Prefix) {
	c.t.Helper()
	n := newBridgeNet(c.t, filepath.Join(c.dir, "unused-podnet"), "unused", "nrcp"+c.token, 1)
	c.bridges = append(c.bridges, n.bridge)
	conf := c.writeJSON("podnet.json", map[string]any{
		"bridge": n.bridge, "subnets": []string{n.v4.String(), n.v6.String()},
		"stateDir": filepath.Join(c.dir, "podnet"),
	})
	c.podnetSubnets = []netip.Prefix{n.v4, n.v6}
	return c.restartPodnet(conf), c.podnetSubnets
}

// restartPodnet starts nri-podnet on the configuration conf.
func (c *crio) restartPodnet(conf string) *testutil.Proc {
	return c.startPlugin("10-podnet", env.podnet, "-config", conf, "-socket", c.nriSock, "-idx", "10", "-name", "podnet")
}

// startNRICNI starts nri-cni (10-cni) on a bridge conflist of its own.
func (c *crio) startNRICNI() (*testutil.Proc, []netip.Prefix) {
	c.t.Helper()
	n := newBridgeNet(c.t, filepath.Join(c.dir, "nri-cni-conf"), "nrinet-crio-e2e-nricni", "nrcn"+c.token, 2)
	c.bridges = append(c.bridges, n.bridge)
	c.ipamDirs = append(c.ipamDirs, n.ipamDir())
	conf := c.writeJSON("nri-cni.json", map[string]any{
		"confDir": n.confDir, "binDirs": []string{env.cniBin},
		"cacheDir": filepath.Join(c.dir, "nri-cni-cache"), "network": n.name,
	})
	return c.startPlugin("10-cni", env.nriCNI, "-config", conf, "-socket", c.nriSock, "-idx", "10", "-name", "cni"), []netip.Prefix{n.v4, n.v6}
}

// forceRemovePod removes a pod through CRI without stopping it first
// (crictl rmp -f).
func (c *crio) forceRemovePod(p *pod) {
	c.t.Helper()
	c.must("rmp", "-f", p.id)
}

// checkRemoved checks that no pod of the instance is left in CRI.
func (c *crio) checkRemoved() {
	c.t.Helper()
	if ids := strings.Fields(c.must("pods", "-q")); len(ids) > 0 {
		c.t.Errorf("pods left after removal: %v", ids)
	}
}
