package kubee2e

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podnetTable is the nftables table (family inet) nri-podnet masquerades
// with (plugins/podnet/masq).
const podnetTable = "nrinet-podnet"

// A peerNode is a Node registered without a kubelet: nri-podnet on the
// real node routes to its pod CIDRs via its underlay address.
type peerNode struct {
	name         string
	addr4, addr6 netip.Addr
	podCIDRs     []netip.Prefix
}

// addPeerNode registers a peer Node (its cleanup deletes it) and waits
// until nri-podnet on the node has routes to its pod CIDRs. The peer has
// neither the label kubernetes.io/os nor nrinet.io/pod-network, so the
// DaemonSet (nodeSelector kubernetes.io/os: linux,
// nrinet.io/pod-network: podnet) puts no pod on it.
func (n *kubeNode) addPeerNode() *peerNode {
	t := n.t
	t.Helper()
	start := time.Now()
	p := &peerNode{name: n.name + "-peer"}
	p.addr4, p.addr6 = n.cp.u.addr()
	n.cp.registerNode(p.name, p.addr4, p.addr6)
	p.podCIDRs = n.cp.podCIDRs(p.name)
	for _, c := range p.podCIDRs {
		via := p.addr4
		if c.Addr().Is6() {
			via = p.addr6
		}
		waitRoute(t, n.host, c, via)
	}
	t.Logf("peer Node %s: pod CIDRs %v; nri-podnet routes to them via %s, %s (%v)", p.name, p.podCIDRs, p.addr4, p.addr6, time.Since(start).Round(time.Millisecond))
	return p
}

// uninstallPodnet is stage 4: docs/deploy.md's uninstall, each step
// checked. Before it, what nri-podnet made on the node is there (its
// bridge, its routes to the peer's pod CIDRs, proto 78, and its nftables
// table); then remove, the command how (kubectl delete -k of the overlay;
// TestHelm's helm uninstall), removes the DaemonSet and its pod, and the
// namespace, and leaves what nri-podnet made in place; nri-podnet
// -uninstall -config <the ConfigMap's config.json>, run in the node's
// namespace, removes the routes, the table and the bridge; the state
// directory and the images are removed. Each is checked gone.
func (n *kubeNode) uninstallPodnet(peer *peerNode, how string, remove func() string) {
	t := n.t
	t.Helper()
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Fatal("nft not found: stage 4 checks nri-podnet's nftables table with it (Debian package nftables)")
	}
	start := time.Now()
	cm, err := n.cp.client.CoreV1().ConfigMaps(podnetNamespace).Get(t.Context(), "nri-podnet-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(n.dir, "podnet-uninstall.json")
	writeFile(t, config, cm.Data["config.json"])
	var bridge struct {
		Bridge string `json:"bridge"`
	}
	if err := jsonUnmarshal(cm.Data["config.json"], &bridge); err != nil || bridge.Bridge == "" {
		t.Fatalf("nri-podnet's config.json %q: no bridge (%v)", cm.Data["config.json"], err)
	}

	// What nri-podnet made, present before the uninstall.
	type state struct {
		bridge, table bool
		routes        []string
	}
	look := func() state {
		var s state
		s.bridge = exec.Command("ip", "-n", n.netns, "link", "show", "dev", bridge.Bridge).Run() == nil
		s.table = exec.Command("ip", "netns", "exec", n.netns, nft, "list", "table", "inet", podnetTable).Run() == nil
		for _, f := range []string{"-4", "-6"} {
			out := run(t, "ip", f, "-n", n.netns, "route", "show", "proto", "78")
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if l != "" {
					s.routes = append(s.routes, l)
				}
			}
		}
		return s
	}
	before := look()
	if !before.bridge || !before.table || len(before.routes) != len(peer.podCIDRs) {
		t.Fatalf("before the uninstall, in %s: bridge %s %v, nftables table inet %s %v, routes proto 78 %q; want the bridge, the table and one route to each of %v",
			n.netns, bridge.Bridge, before.bridge, podnetTable, before.table, before.routes, peer.podCIDRs)
	}
	t.Logf("before the uninstall: bridge %s, table inet %s, routes %q", bridge.Bridge, podnetTable, before.routes)

	step := time.Now()
	out := remove()
	n.waitPodnetGone()
	t.Logf("%s, pod gone in %v:\n%s", how, time.Since(step).Round(time.Millisecond), out)
	if _, err := n.cp.client.CoreV1().Namespaces().Get(t.Context(), podnetNamespace, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s still there after %s", podnetNamespace, how)
	}

	// nri-podnet leaves what it made when it stops.
	if s := look(); !s.bridge || !s.table || len(s.routes) != len(before.routes) {
		t.Errorf("nri-podnet's pod gone: bridge %v, table %v, routes %q; want all left in place until the uninstall", s.bridge, s.table, s.routes)
	}
	if out, err := exec.Command("ip", "netns", "exec", n.netns, env.podnet, "-uninstall", "-config", config).CombinedOutput(); err != nil {
		t.Fatalf("nri-podnet -uninstall -config %s in %s: %v\n%s", config, n.netns, err, out)
	} else {
		t.Logf("nri-podnet -uninstall:\n%s", out)
	}
	if err := os.RemoveAll(n.podnetState); err != nil {
		t.Error(err)
	}
	// The images the node pulled from the registry (the version it ran
	// and the one it was upgraded to): what the kubelet's image garbage
	// collection would remove in time, removed now.
	ctr := filepath.Join(stage3.containerdBin, "ctr")
	ctrArgs := []string{"--address", n.sock, "--namespace", "k8s.io", "images"}
	list, err := exec.Command(ctr, append(ctrArgs, "ls", "-q")...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images ls: %v\n%s", err, list)
	}
	var pulled []string
	for _, ref := range strings.Fields(string(list)) {
		if strings.HasPrefix(ref, podnetImageRef("")) {
			pulled = append(pulled, ref)
		}
	}
	if len(pulled) == 0 {
		t.Errorf("no image of %s on the node: want the ones its DaemonSet pulled; the node has:\n%s", podnetImageRef("<tag>"), list)
	}
	for _, ref := range pulled {
		// crictl rmi: every reference CRI keeps of the image (tag,
		// repository digest, image ID) goes.
		if out, errOut, err := n.crictl("rmi", ref); err != nil {
			t.Errorf("crictl rmi %s: %v\n%s%s", ref, err, out, errOut)
		}
	}
	if list, err := exec.Command(ctr, append(ctrArgs, "ls", "-q")...).CombinedOutput(); err != nil {
		t.Errorf("ctr images ls: %v\n%s", err, list)
	} else if strings.Contains(string(list), env.registry.repository()+"/nri-podnet") {
		t.Errorf("after crictl rmi, the node still has references of nri-podnet's image:\n%s", list)
	}

	after := look()
	if after.bridge {
		t.Errorf("after the uninstall: bridge %s still in %s", bridge.Bridge, n.netns)
	}
	if after.table {
		t.Errorf("after the uninstall: nftables table inet %s still in %s", podnetTable, n.netns)
	}
	if len(after.routes) != 0 {
		t.Errorf("after the uninstall: routes proto 78 still in %s: %q", n.netns, after.routes)
	}
	if _, err := os.Stat(n.podnetState); err == nil {
		t.Errorf("after the uninstall: %s still there", n.podnetState)
	}
	if out, err := exec.Command(ctr, "--address", n.sock, "--namespace", "k8s.io", "images", "ls", "-q").CombinedOutput(); err != nil || strings.Contains(string(out), "nri-podnet") {
		t.Errorf("after the uninstall: containerd lists nri-podnet's image (%v):\n%s", err, out)
	}
	t.Logf("uninstalled: bridge, table, routes, state, images gone (%v)", time.Since(start).Round(time.Millisecond))
}
