package kubee2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// nodeReadyTimeout bounds how long a node's nrinetd may take until its CRI
// socket answers and nri-podnet is connected (NetworkReady), including,
// in -kube mode, until nri-podnet knows the node's pod CIDRs.
const nodeReadyTimeout = 60 * time.Second

// A node is a network namespace on the underlay running nrinetd with
// nri-podnet, registered as a Node of the control plane. Its files are
// under dir; its pods get network namespaces from nrinetd
// (/run/netns/nrinet-<sandbox ID prefix>) and addresses from nri-podnet.
type node struct {
	t  testing.TB
	cp *controlPlane
	*host
	// name is the Node object's name, also the namespace's.
	name string
	dir  string

	criSock, nriSock, crictlConfig string
	// cri runs crictl against the node's nrinetd.
	cri *testutil.Crictl
	// bridge is nri-podnet's bridge, inside the namespace.
	bridge string
	// podCIDRs are the Node's spec.podCIDRs, IPv4 first.
	podCIDRs []netip.Prefix

	nrinetd, podnet *proc
	pods            []*pod

	opts nodeOptions
	// healthAddr is nri-podnet's -http-address (host:port on the
	// node's underlay address), with opts.health.
	healthAddr string
}

// nodeOptions change a node. The zero value is the stages'.
type nodeOptions struct {
	// podCIDRs, if set, are the Node's spec.podCIDRs, set when it is
	// registered (a control plane without node IPAM); clusterCIDRs, if
	// set, are nri-podnet's -cluster-cidr instead of clusterCIDR4 and
	// clusterCIDR6.
	podCIDRs, clusterCIDRs []netip.Prefix
	// health: nri-podnet serves /readyz and /metrics (-http-address)
	// on the node's underlay address.
	health bool
	// podnetEnv is nri-podnet's environment besides the test's
	// ("NAME=value").
	podnetEnv []string
}

// A pod is a pod sandbox run with crictl on a node.
type pod struct {
	name string
	id   string
	// netns is its network namespace's name (under /run/netns).
	netns string
	// ips are the addresses CRI reports, IPv4 first.
	ips []netip.Addr
}

// addr returns the pod's address of a's family.
func (p *pod) addr(v4 bool) netip.Addr {
	for _, a := range p.ips {
		if a.Is4() == v4 {
			return a
		}
	}
	return netip.Addr{}
}

// startNode makes node nrke-<token>-<suffix>: its namespace on the
// underlay, its Node object (InternalIPs: its underlay addresses), and
// waits for the Node's pod CIDRs; then starts nrinetd and nri-podnet in
// the namespace and waits until nrinetd reports the network ready.
// nri-podnet runs in -kube mode: it reads the pod CIDRs itself.
func startNode(t testing.TB, cp *controlPlane, suffix string) *node {
	t.Helper()
	return startNodeWith(t, cp, suffix, nodeOptions{})
}

// startNodeWith starts a node as startNode does, changed by opts.
func startNodeWith(t testing.TB, cp *controlPlane, suffix string, opts nodeOptions) *node {
	t.Helper()
	name := "nrke-" + cp.token + "-" + suffix
	n := &node{t: t, cp: cp, name: name, bridge: "nrkp" + cp.token, opts: opts}
	n.host = newHost(t, cp.u, name, "nrke"+cp.token+suffix, true)
	n.dir = cp.path("nodes", suffix)
	n.criSock, n.nriSock = filepath.Join(n.dir, "cri.sock"), filepath.Join(n.dir, "nri.sock")
	if len(opts.podCIDRs) > 0 {
		cp.registerNodeWithCIDRs(name, opts.podCIDRs, n.addr4, n.addr6)
		n.podCIDRs = opts.podCIDRs
	} else {
		cp.registerNode(name, n.addr4, n.addr6)
		n.podCIDRs = cp.podCIDRs(name)
		checkPodCIDRs(t, cp.family(), name, n.podCIDRs)
	}

	// After the processes stopped (cleanups run last first): every pod
	// namespace is gone.
	t.Cleanup(n.checkPodsGone)
	n.startNrinetd()
	n.startPodnet()
	// Registered last, so it runs first: the pods go through CRI while
	// nrinetd and nri-podnet still run, as the kubelet would remove them.
	t.Cleanup(n.removePods)
	n.waitNetworkReady()
	return n
}

// startNrinetd writes nrinetd's configuration (everything under dir, no
// plugin launching, podnet required) and starts it in the namespace.
func (n *node) startNrinetd() {
	t := n.t
	conf := fmt.Sprintf(`cri_socket = %q
nri_socket = %q
plugin_dir = ""
plugin_config_dir = ""
state_dir = %q
required_network_plugins = ["podnet"]
metrics_address = ""
log_level = "info"
`, n.criSock, n.nriSock, filepath.Join(n.dir, "nrinetd"))
	path := filepath.Join(n.dir, "nrinetd.toml")
	writeFile(t, path, conf)
	cri, err := testutil.NewCrictl(env.crictl, n.criSock, n.dir, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cri.Name = n.name
	n.cri, n.crictlConfig = cri, cri.Config
	n.nrinetd = startProc(t, n.name+"/nrinetd", n.netnsPath, nil, env.nrinetd, "-config", path)
}

// startPodnet writes nri-podnet's configuration and starts it in the
// namespace, connecting to nrinetd's NRI socket as plugin 10-podnet.
// It runs with -kube -kubeconfig -node-name -cluster-cidr
// (docs/dev/kube-e2e.md): subnets, routes and masquerade from Kubernetes; the
// configuration has no subnets.
func (n *node) startPodnet() {
	t := n.t
	cfg := map[string]any{"bridge": n.bridge, "stateDir": filepath.Join(n.dir, "podnet")}
	// The Node's credentials are its own user's, with only what the
	// DaemonSet's ClusterRole grants (deploy/base): nodes get, list,
	// watch.
	clusterCIDRs := clusterCIDR4.String() + "," + clusterCIDR6.String()
	if len(n.opts.clusterCIDRs) > 0 {
		var s []string
		for _, c := range n.opts.clusterCIDRs {
			s = append(s, c.String())
		}
		clusterCIDRs = strings.Join(s, ",")
	}
	args := []string{"-config", filepath.Join(n.dir, "podnet.json"), "-socket", n.nriSock, "-name", "podnet", "-idx", "10",
		"-kube", "-kubeconfig", n.cp.podnetKubeconfig(n.name), "-node-name", n.name,
		"-cluster-cidr", clusterCIDRs}
	if n.opts.health {
		// The node's namespace is the test's own: the port is free.
		n.healthAddr = net.JoinHostPort(n.addr4.String(), "9465")
		args = append(args, "-http-address", n.healthAddr)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(n.dir, "podnet.json"), string(b))
	n.podnet = startProc(t, n.name+"/nri-podnet", n.netnsPath, n.opts.podnetEnv, env.podnet, args...)
}

// waitNetworkReady polls crictl info until nrinetd answers and reports
// NetworkReady (podnet, a required network plugin, connected).
func (n *node) waitNetworkReady() {
	t := n.t
	waitFor(t, n.name+"'s NetworkReady", nodeReadyTimeout, 100*time.Millisecond, func() (bool, string) {
		for _, p := range []*proc{n.nrinetd, n.podnet} {
			if !p.running() {
				t.Fatalf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, p.log.tail(40))
			}
		}
		out, errOut, err := n.crictl("info")
		if err != nil {
			return false, errOut
		}
		var v struct {
			Status struct {
				Conditions []struct {
					Type    string `json:"type"`
					Status  bool   `json:"status"`
					Message string `json:"message"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("crictl info on %s: %v\n%s", n.name, err, out)
		}
		for _, c := range v.Status.Conditions {
			if c.Type == "NetworkReady" {
				return c.Status, c.Message
			}
		}
		return false, out
	})
}

// crictl runs crictl against the node's nrinetd, with the node's own
// configuration file (so /etc/crictl.yaml is never read).
func (n *node) crictl(args ...string) (string, string, error) {
	return n.cri.Run(args...)
}

// must runs crictl and fails the test if it fails.
func (n *node) must(args ...string) string {
	n.t.Helper()
	return n.cri.Must(n.t, args...)
}

// runPod runs a pod sandbox with crictl runp and checks its network: the
// addresses CRI reports are one of each family, inside the node's pod
// CIDRs, and are eth0's global addresses in the pod's namespace.
func (n *node) runPod(name string) *pod {
	n.t.Helper()
	return n.runPodIn("nrinet-kube-e2e", name, nil)
}

// runPodIn runs a pod as runPod does, in namespace ns with labels (the
// CRI labels, which NRI passes to nri-podnet as the pod's).
func (n *node) runPodIn(ns, name string, labels map[string]string) *pod {
	t := n.t
	t.Helper()
	cfg := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": ns, "uid": ns + "-" + name + "-" + n.cp.token, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(n.dir, "logs", ns, name),
		"linux":         map[string]any{},
	}
	if len(labels) > 0 {
		cfg["labels"] = labels
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(n.dir, "pod-"+ns+"-"+name+".json")
	writeFile(t, path, string(b))
	p := &pod{name: name, id: strings.TrimSpace(n.must("runp", path))}
	n.pods = append(n.pods, p)
	p.netns = "nrinet-" + p.id[:12]

	var insp struct {
		Status struct {
			Network struct {
				IP            string `json:"ip"`
				AdditionalIPs []struct {
					IP string `json:"ip"`
				} `json:"additionalIps"`
			} `json:"network"`
		} `json:"status"`
	}
	out := n.must("inspectp", "-o", "json", p.id)
	if err := json.Unmarshal([]byte(out), &insp); err != nil {
		t.Fatalf("crictl inspectp %s: %v\n%s", name, err, out)
	}
	ips := []string{insp.Status.Network.IP}
	for _, a := range insp.Status.Network.AdditionalIPs {
		ips = append(ips, a.IP)
	}
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatalf("pod %s on %s: CRI address %q: %v", name, n.name, s, err)
		}
		p.ips = append(p.ips, a)
	}
	if len(p.ips) != 2 || !p.ips[0].Is4() || !p.ips[1].Is6() {
		t.Fatalf("pod %s on %s: CRI reports addresses %v, want an IPv4 and an IPv6 one", name, n.name, p.ips)
	}
	for i, a := range p.ips {
		if !n.podCIDRs[i].Contains(a) {
			t.Errorf("pod %s on %s: address %s is outside the node's pod CIDR %s", name, n.name, a, n.podCIDRs[i])
		}
	}
	if got, want := eth0Addrs(t, p.netns), slices.Clone(p.ips); !slices.Equal(got, want) {
		t.Errorf("pod %s on %s: eth0 has %v, CRI reports %v", name, n.name, got, want)
	}
	return p
}

// eth0Addrs lists eth0's global addresses in the named namespace, IPv4
// first.
func eth0Addrs(t testing.TB, netns string) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for _, l := range strings.Split(run(t, "ip", "-n", netns, "-o", "addr", "show", "dev", "eth0", "scope", "global"), "\n") {
		f := strings.Fields(l)
		for i := range f {
			if (f[i] == "inet" || f[i] == "inet6") && i+1 < len(f) {
				p, err := netip.ParsePrefix(f[i+1])
				if err != nil {
					t.Fatalf("ip addr in %s: %v in %q", netns, err, l)
				}
				got = append(got, p.Addr())
			}
		}
	}
	slices.SortFunc(got, func(a, b netip.Addr) int { return a.Compare(b) })
	return got
}

// checkBridgeNoDAD checks that no IPv6 address of the node's bridge is
// tentative once it has pods: nri-podnet gives it the link-local fe80::1
// without duplicate address detection and turns the kernel's own off, so
// that the node solicits neighbours for packets it forwards to its pods at
// once (with a kernel-made link-local it would not for about a second).
func (n *node) checkBridgeNoDAD() {
	n.t.Helper()
	if out := strings.TrimSpace(run(n.t, "ip", "-n", n.netns, "-6", "addr", "show", "dev", n.bridge, "tentative")); out != "" {
		n.t.Errorf("%s's bridge %s has tentative IPv6 addresses right after its pods ran:\n%s", n.name, n.bridge, out)
	}
}

// removePods stops and removes the node's pods with crictl.
func (n *node) removePods() {
	for _, p := range n.pods {
		if !n.nrinetd.running() {
			return
		}
		if out, errOut, err := n.crictl("rmp", "-f", p.id); err != nil {
			n.t.Errorf("crictl rmp -f %s on %s: %v\n%s%s", p.id, n.name, err, out, errOut)
		}
	}
}

// checkPodsGone checks that no pod's network namespace is left, and
// deletes any that is (by its exact name).
func (n *node) checkPodsGone() {
	for _, p := range n.pods {
		if _, err := os.Stat(filepath.Join(netnsDir, p.netns)); err == nil {
			n.t.Errorf("left behind: pod %s's network namespace %s", p.name, p.netns)
			if out, err := exec.Command("ip", "netns", "del", p.netns).CombinedOutput(); err != nil {
				n.t.Errorf("ip netns del %s: %v\n%s", p.netns, err, out)
			}
		}
	}
}

// waitNodeRoutes waits until every node's namespace has a route to every
// other node's pod CIDRs via that node's underlay address: nri-podnet's
// -kube mode makes them.
func waitNodeRoutes(t testing.TB, nodes []*node) {
	t.Helper()
	for _, n := range nodes {
		for _, other := range nodes {
			if other == n {
				continue
			}
			for _, c := range other.podCIDRs {
				via := other.addr4
				if c.Addr().Is6() {
					via = other.addr6
				}
				waitRoute(t, n.host, c, via)
			}
		}
	}
}

// waitRoute waits until namespace h has a route to c via via.
func waitRoute(t testing.TB, h *host, c netip.Prefix, via netip.Addr) {
	t.Helper()
	waitFor(t, fmt.Sprintf("route to %s via %s in %s", c, via, h.netns), nodeReadyTimeout, 200*time.Millisecond, func() (bool, string) {
		out, err := exec.Command("ip", ipFamily(c.Addr()), "-n", h.netns, "route", "show", c.String()).CombinedOutput()
		return err == nil && strings.Contains(string(out), "via "+via.String()), string(out)
	})
}

// ipFamily is ip's option for a's family: -4 or -6 (ip route show
// <IPv6 prefix> lists nothing without -6).
func ipFamily(a netip.Addr) string {
	if a.Is6() {
		return "-6"
	}
	return "-4"
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
