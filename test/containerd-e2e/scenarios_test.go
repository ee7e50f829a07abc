package containerde2e

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/test/containerd-e2e/internal/adjust"
)

// A scenario starts one containerd instance with opts, runs, and leaves
// the leak check to the instance's cleanup.
type scenario struct {
	name string
	opts options
	// run drives the instance and returns the shapes of its pods'
	// networks (nil if the scenario has none to compare).
	run func(c *containerd) []shape
	// sameNetworkAs names an earlier scenario whose pods' network shapes
	// this one's must equal, when both ran.
	sameNetworkAs string
}

// scenarios are the scenarios; 5 (nothing left behind) runs after
// each of them. Run one with
//
//	NRINET_CONTAINERD_E2E=1 go test -run 'TestContainerd/^4-' .
//
// (make e2e-containerd E2E_RUN='^4-' does the same after building both
// containerd variants).
var scenarios = []scenario{
	{
		name: "1-cni/stock", opts: options{nri: "upstream", network: networkCNI},
		run: cniWithAdjusters,
	},
	{
		name: "1-cni/compat", opts: options{nri: "compat", network: networkCNI},
		run: cniWithAdjusters, sameNetworkAs: "1-cni/stock",
	},
	{
		name: "2-nri-podnet",
		opts: options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"podnet"}},
		run:  nriPodnet,
	},
	{
		name: "3-nri-cni",
		opts: options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"cni"}},
		run:  nriCNI, sameNetworkAs: "1-cni/stock",
	},
	{
		name: "4-podnet-refused/stock", opts: options{nri: "upstream", network: networkCNI},
		run: refused(podnetPlugin), sameNetworkAs: "1-cni/stock",
	},
	{
		name: "4-cni-refused/stock", opts: options{nri: "upstream", network: networkCNI},
		run: refused(cniPlugin), sameNetworkAs: "1-cni/stock",
	},
	{
		name: "6-mode-switch", opts: options{nri: "compat", network: networkCNI},
		run: modeSwitch,
	},
}

func TestContainerd(t *testing.T) {
	skipUnlessEnabled(t)
	shapes := map[string][]shape{}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			start := time.Now()
			c := startContainerd(t, sc.opts)
			got := sc.run(c)
			t.Logf("scenario ran in %v (from containerd's start)", time.Since(start).Round(time.Millisecond))
			if t.Failed() {
				return
			}
			shapes[sc.name] = got
			if want, ok := shapes[sc.sameNetworkAs]; ok && !reflect.DeepEqual(got, want) {
				t.Errorf("pod networks differ from %s's:\n%s\nwant\n%s", sc.sameNetworkAs, shapesString(got), shapesString(want))
			}
		})
	}
}

func shapesString(shapes []shape) string {
	var lines []string
	for i, s := range shapes {
		lines = append(lines, fmt.Sprintf("  pod %d: %s", i, s))
	}
	return strings.Join(lines, "\n")
}

// Memory limits the adjuster plugins set (page multiples, so that cgroup
// v1 reports them unchanged).
const (
	stubMemory   = 64 << 20
	pluginMemory = 96 << 20
)

// cniWithAdjusters is scenario 1: pods get their network from containerd's
// CNI mode (the bridge conflist); an adjuster plugin on upstream's stub and
// one on nrinet's plugin package, separate processes on the NRI socket,
// each adjust the container of one pod (environment, annotation, mount,
// memory limit), checked inside the running container; the pods' networks
// have the CNI network's shape and the pods ping each other.
func cniWithAdjusters(c *containerd) []shape {
	t := c.t
	type target struct {
		spec adjust.Spec
		proc *pluginProc
		pod  *pod
	}
	targets := []*target{
		{spec: c.adjusterSpec("e2e-stub", "20", "stub-target", stubMemory)},
		{spec: c.adjusterSpec("e2e-plugin", "21", "plugin-target", pluginMemory)},
	}
	targets[0].proc = c.startAdjuster(env.stubAdjuster, targets[0].spec)
	targets[1].proc = c.startAdjuster(env.pluginAdjuster, targets[1].spec)
	start := time.Now()
	targets[0].pod = c.runPod("a", "stub-target")
	targets[1].pod = c.runPod("b", "plugin-target")
	t.Logf("two pods running in %v", time.Since(start).Round(time.Millisecond))

	for i, tg := range targets {
		c.checkAdjusted(tg.pod, tg.proc, tg.spec, targets[1-i].spec)
	}

	return c.checkPods(c.cni.ipNet, targets[0].pod, targets[1].pod)
}

// checkAdjusted checks, inside the pod's running container, what the
// adjuster plugin did, and that the other plugin did nothing to it.
func (c *containerd) checkAdjusted(p *pod, proc *pluginProc, spec, other adjust.Spec) {
	t := c.t
	t.Helper()
	c.waitLine(proc, adjust.Adjusted+p.ctrID)
	envOut := c.exec(p, "env")
	lines := strings.Split(envOut, "\n")
	if want := spec.EnvKey + "=" + spec.EnvValue; !slices.Contains(lines, want) {
		t.Errorf("env in %s: no %s (plugin %s)\n%s", p.container, want, spec.Name, envOut)
	}
	if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, other.EnvKey+"=") }) {
		t.Errorf("env in %s has %s, which plugin %s sets on %s only", p.container, other.EnvKey, other.Name, other.Container)
	}
	// crictl exec ends the output with blank lines of its own.
	if got, want := strings.TrimSpace(c.exec(p, "cat", spec.MountDestination+"/token")), spec.Name+" "+c.token; got != want {
		t.Errorf("cat %s/token in %s = %q, want %q (the plugin's mount of %s)", spec.MountDestination, p.container, got, want, spec.MountSource)
	}
	if got, want := strings.TrimSpace(c.exec(p, "cat", memoryLimitFile())), strconv.FormatInt(spec.MemoryLimit, 10); got != want {
		t.Errorf("memory limit in %s (%s) = %s, want %s (plugin %s)", p.container, memoryLimitFile(), got, want, spec.Name)
	}
	ann := c.inspectSpec(p.ctrID).Annotations
	if got := ann[spec.AnnotationKey]; got != spec.AnnotationValue {
		t.Errorf("annotation %s of %s = %q, want %q (plugin %s)", spec.AnnotationKey, p.container, got, spec.AnnotationValue, spec.Name)
	}
	if _, ok := ann[other.AnnotationKey]; ok {
		t.Errorf("%s has annotation %s of plugin %s", p.container, other.AnnotationKey, other.Name)
	}
}

// memoryLimitFile is where a container reads its memory limit: its own
// cgroup, mounted at /sys/fs/cgroup by runc.
func memoryLimitFile() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup/memory.max" // cgroup v2
	}
	return "/sys/fs/cgroup/memory/memory.limit_in_bytes"
}

// checkPods checks that each pod has the network's kind of network (eth0
// and lo; on eth0 one address of each subnet, with the subnet's prefix
// length, the addresses CRI reports; default routes through the
// network's gateways) and that the pods ping the IPv4 gateway and each
// other over both families. It returns the pods' shapes.
func (c *containerd) checkPods(net ipNet, pods ...*pod) []shape {
	t := c.t
	t.Helper()
	var shapes []shape
	nets := make([]podNet, len(pods))
	for i, p := range pods {
		n := c.podNetwork(p)
		nets[i] = n
		s := shapeOf(net, n)
		shapes = append(shapes, s)
		t.Logf("pod %s: %s", p.name, s)
		if !slices.Equal(s.Ifaces, []string{"eth0", "lo"}) {
			t.Errorf("pod %s: interfaces %v, want eth0 and lo", p.name, s.Ifaces)
		}
		if len(n.cri) != 2 || !net.v4.Contains(n.cri[0]) || !net.v6.Contains(n.cri[1]) {
			t.Errorf("pod %s: CRI addresses %v, want one of %s, then one of %s", p.name, n.cri, net.v4, net.v6)
		}
		var eth0 []netip.Addr
		for _, a := range n.addrs {
			eth0 = append(eth0, a.Addr())
			want := net.v6.Bits()
			if a.Addr().Is4() {
				want = net.v4.Bits()
			}
			if a.Bits() != want {
				t.Errorf("pod %s: eth0 address %s, want prefix length %d", p.name, a, want)
			}
		}
		if !slices.Equal(eth0, n.cri) {
			t.Errorf("pod %s: eth0 has %v, CRI reports %v", p.name, eth0, n.cri)
		}
		if want := []string{"via " + net.gw4.String() + " dev eth0", "via " + net.gw6.String() + " dev eth0"}; !slices.Equal(n.defaults, want) {
			t.Errorf("pod %s: default routes %v, want %v", p.name, n.defaults, want)
		}
	}
	if t.Failed() {
		return shapes
	}
	for i, from := range pods {
		c.ping(from, net.gw4)
		for j := range pods {
			if i != j {
				for _, a := range nets[j].cri {
					c.ping(from, a)
				}
			}
		}
	}
	return shapes
}

// A netPlugin is one of nrinet's network plugins, as a test starts it by
// hand on containerd's NRI socket.
type netPlugin struct {
	// name is the plugin's full name, NN-name.
	name string
	// start writes the plugin's configuration, starts it and returns it
	// with the bridge the pods it wires would be attached to.
	start func(c *containerd) (p *pluginProc, bridge string, net ipNet)
}

// podnetPlugin is nri-podnet with a bridge and subnets of its own and state
// under c.dir. It sets up its bridge before it connects.
var podnetPlugin = netPlugin{name: "10-podnet", start: func(c *containerd) (*pluginProc, string, ipNet) {
	var avoid []ipNet
	if c.cni != nil {
		avoid = append(avoid, c.cni.ipNet)
	}
	net := newIPNet(c.t, avoid...)
	bridge := "nrpn" + c.token
	c.extraBridges = append(c.extraBridges, bridge)
	conf := c.writeJSON("podnet.json", map[string]any{
		"bridge": bridge, "subnets": []string{net.v4.String(), net.v6.String()},
		"stateDir": filepath.Join(c.dir, "podnet"),
	})
	p := c.startPlugin("10-podnet", env.podnet, "-config", conf, "-socket", c.nriSock, "-idx", "10", "-name", "podnet")
	return p, bridge, net
}}

// cniPlugin is nri-cni on a bridge conflist of its own (not containerd's),
// with its cache under c.dir.
var cniPlugin = netPlugin{name: "10-cni", start: func(c *containerd) (*pluginProc, string, ipNet) {
	var avoid []ipNet
	if c.cni != nil {
		avoid = append(avoid, c.cni.ipNet)
	}
	n := newCNINet(c.t, c.dir, "nrinet-ce2e-nricni", "nrcn", c.token, false, avoid...)
	c.pluginNets = append(c.pluginNets, n)
	conf := c.writeJSON("nri-cni.json", map[string]any{
		"confDir": n.confDir, "binDirs": []string{env.cniBin},
		"cacheDir": filepath.Join(c.dir, "nri-cni-cache"), "network": n.name,
	})
	p := c.startPlugin("10-cni", env.nriCNI, "-config", conf, "-socket", c.nriSock, "-idx", "10", "-name", "cni")
	return p, n.bridge, n.ipNet
}}

// refusal is what a network plugin's error must name when it refuses a
// runtime: the missing extension.
const refusal = "pod network extension"

// refused is scenario 4 for a network plugin: connected to stock
// containerd's NRI socket, it refuses to run without nrinet's pod network
// extension. It exits non-zero with an error naming itself and the
// missing extension (an error matching plugin.ErrNoNetworkExtension),
// wires no pod, and pods keep getting their network from containerd's CNI
// mode and ping each other.
func refused(np netPlugin) func(c *containerd) []shape {
	return func(c *containerd) []shape {
		t := c.t
		p, bridge, _ := np.start(c)
		switch {
		case !p.WaitExit(pluginTimeout):
			t.Errorf("%s still runs %v after it was started against stock containerd; "+
				"want it to refuse (no pod network extension) and exit non-zero\nstderr:\n%s", np.name, pluginTimeout, p.Stderr)
		case p.Cmd.ProcessState.ExitCode() <= 0 || !strings.Contains(p.Stderr.String(), refusal) || !strings.Contains(p.Stderr.String(), np.name):
			t.Errorf("%s exited with %v; want a non-zero status and an error naming the plugin and the missing %q\nstderr:\n%s",
				np.name, p.Cmd.ProcessState, refusal, p.Stderr)
		default:
			t.Logf("%s refused: %v\n%s", np.name, p.Cmd.ProcessState, strings.TrimSpace(p.Stderr.String()))
		}
		a := c.runPod("a", "a")
		b := c.runPod("b", "b")
		if ports := readDirNames(filepath.Join(sysClassNet, bridge, "brif")); len(ports) > 0 {
			t.Errorf("%s's bridge %s has ports %v: the refused plugin wired pods", np.name, bridge, ports)
		}
		return c.checkPods(c.cni.ipNet, a, b)
	}
}
