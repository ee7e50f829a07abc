package kubee2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// A clusterNetwork is the pod network of a conformance cluster.
type clusterNetwork string

const (
	// networkBaseline is stock containerd v2.4.2 in its CNI mode with the
	// CNI reference plugins: bridge (hairpin mode) + host-local on the
	// Node's pod CIDRs, and portmap with its nftables backend; the routes
	// between the nodes and the masquerade are the test's (what a cluster's
	// network daemon does beside the CNI plugins: baselineRoutes).
	networkBaseline clusterNetwork = "baseline"
	// networkNrinet is containerd on nrinet in network mode nri with
	// nri-podnet as the DaemonSet of deploy/ (deployPodnet).
	networkNrinet clusterNetwork = "nrinet"
	// networkMixed is nrinet's network on two runtimes: node a runs
	// containerd on nrinet, node b CRI-O on nrinet (crionode_test.go), both
	// in network mode nri, with one nri-podnet DaemonSet serving both.
	networkMixed clusterNetwork = "mixed"
	// networkMultinet is nrinet's network with nri-podnet's DRA driver
	// running: the DaemonSet of deploy/overlays/nri-podnet-multinetwork
	// with the multi-network stage's secondary networks on a second L2
	// segment between the nodes (deployMultinet), and no claim made.
	networkMultinet clusterNetwork = "multinetwork"
)

// crioNode reports whether the cluster network runs the node of suffix
// on CRI-O: node b of the mixed cluster.
func (network clusterNetwork) crioNode(suffix string) bool {
	return network == networkMixed && suffix == "b"
}

// The kube-dns Service's cluster IPs, one per family: the tenth address
// of each service range, as kubeadm picks it.
var (
	kubeDNS4 = netip.MustParseAddr("198.19.255.10")
	kubeDNS6 = netip.MustParseAddr("fd00:198:18:ffff::a")
)

// clusterNodes are the suffixes of a cluster's nodes.
var clusterNodes = []string{"a", "b"}

// A cluster is a conformance cluster (docs/results/conformance.md): a control
// plane with the controllers and the scheduler the suite's specs need,
// two real nodes, each running containerd, a kubelet and kube-proxy in
// nftables mode, one pod network, and CoreDNS behind the kube-dns
// Service.
type cluster struct {
	t       testing.TB
	cp      *controlPlane
	network clusterNetwork
	nodes   []*kubeNode
}

// startCluster starts a cluster on the control plane cp (which must have
// the conformance controllers, conformanceControllers) with the pod
// network network, importing images into every node, and waits until
// every Node is Ready and CoreDNS answers.
//
// The two kubelets run at the same time: the cluster takes the kubelet
// host lock once for both (lockKubeletHost), so that no other run's
// kubelet shares the host-wide paths with them, and its two kubelets share
// /var/lib/kubelet/device-plugins (docs/results/conformance.md, "Two kubelets on
// one host").
func startCluster(t testing.TB, cp *controlPlane, network clusterNetwork, images []imageArchive) *cluster {
	t.Helper()
	start := time.Now()
	c := launchCluster(t, cp, network, kubeNodeOptions{
		clusterDNS: cp.family().kubeDNS(),
		maxPods:    110,
		images:     images,
	})
	c.deployCoreDNS()
	t.Logf("cluster %s: up in %v", network, time.Since(start).Round(time.Millisecond))
	return c
}

// launchCluster starts a cluster as startCluster does up to its Ready
// Nodes, without CoreDNS: the scheduler, the two nodes with opts (and
// what every cluster node has: kube-proxy, and with the baseline network
// the CNI options), the routes and the pod network.
func launchCluster(t testing.TB, cp *controlPlane, network clusterNetwork, opts kubeNodeOptions) *cluster {
	t.Helper()
	start := time.Now()
	c := &cluster{t: t, cp: cp, network: network}
	lockKubeletHost(t)
	var sec *secondaryUnderlay
	if network == networkMultinet {
		sec = newSecondaryUnderlay(t, cp.token) // before the nodes: its cleanup runs after theirs
	}
	cp.startScheduler()
	opts.cni = network == networkBaseline
	opts.cniServices, opts.hostLocked, opts.kubeProxy = true, true, true
	for _, s := range clusterNodes {
		o := opts
		o.crio = network.crioNode(s)
		c.nodes = append(c.nodes, launchKubeNode(t, cp, s, o))
	}
	c.routeHostToPods()
	switch network {
	case networkBaseline:
		for _, n := range c.nodes {
			n.baselineRoutes(c.nodes)
			n.writeCNIConfig()
		}
		for _, n := range c.nodes {
			n.waitReady()
		}
	case networkNrinet, networkMixed:
		deployPodnet(t, c.nodes...)
	case networkMultinet:
		nodes := map[string]*kubeNode{}
		for i, suffix := range clusterNodes {
			nodes[suffix] = c.nodes[i]
			sec.attach(c.nodes[i], suffix)
		}
		deployMultinet(t, cp, nodes, !opts.kubeProxy)
	default:
		t.Fatalf("unknown cluster network %q", network)
	}
	t.Logf("cluster %s: Nodes Ready %v after the start", network, time.Since(start).Round(time.Millisecond))
	return c
}

// routeHostToPods routes, in the host's namespace, each node's pod CIDRs
// via its underlay address, as the control plane of a cluster reaches its
// pods: the apiserver proxies to pods and Services (the Proxy specs), and
// e2e.test, which runs on the host, reaches pods directly. The routes are
// deleted by their exact prefix when the test ends; the pod CIDRs must not
// overlap any address or route the host has (another suite's).
func (c *cluster) routeHostToPods() {
	t := c.t
	t.Helper()
	used := hostPrefixes(t)
	for _, n := range c.nodes {
		for _, p := range n.podCIDRs {
			for _, u := range used {
				if u.Bits() > 0 && u.Overlaps(p) {
					t.Fatalf("node %s's pod CIDR %s overlaps the host's %s: another run's route?", n.name, p, u)
				}
			}
			via := n.addr4
			if p.Addr().Is6() {
				via = n.addr6
			}
			run(t, "ip", ipFamily(via), "route", "add", p.String(), "via", via.String(), "dev", c.cp.u.bridge)
			t.Cleanup(func() {
				out, err := exec.Command("ip", ipFamily(via), "route", "del", p.String(), "via", via.String(), "dev", c.cp.u.bridge).CombinedOutput()
				// The bridge may be gone already, and its routes with it.
				if err != nil && !strings.Contains(string(out), "No such process") && !strings.Contains(string(out), "Cannot find device") {
					t.Errorf("ip route del %s via %s: %v\n%s", p, via, err, out)
				}
			})
		}
	}
}

// baselineBridge makes the node's CNI bridge, if it is not there, with
// DAD off, and up (baselineRoutes).
func (n *kubeNode) baselineBridge() {
	t := n.t
	t.Helper()
	br := n.cniBridge()
	if exec.Command("ip", "-n", n.netns, "link", "show", br).Run() != nil {
		run(t, "ip", "-n", n.netns, "link", "add", br, "type", "bridge")
	}
	run(t, "ip", "netns", "exec", n.netns, "sh", "-c", "echo 0 > /proc/sys/net/ipv6/conf/"+br+"/accept_dad")
	run(t, "ip", "-n", n.netns, "link", "set", br, "up")
}

// baselineTable is the nftables table (family inet) in which a baseline
// node masquerades its pods' traffic leaving the cluster CIDRs.
const baselineTable = "nrke-baseline"

// baselineRoutes does on a baseline node what a cluster network daemon
// does beside the CNI plugins (kindnet, flannel's host-gw): a route to
// every other node's pod CIDRs via its underlay address, and the
// masquerade of the pods' traffic (of each family of the node's pod
// CIDRs) to addresses outside the cluster CIDRs
// (the apiserver, behind the kubernetes Service), in the nftables table
// baselineTable of the node's namespace. Both go with the namespace.
//
// It also makes the CNI bridge (writeCNIConfig's), up, with IPv6
// duplicate address detection off, before the node's first pod, as such
// a daemon readies its bridge: the bridge plugin would make it with the
// first pod, its addresses tentative for a second (DAD), and the node
// could not resolve its pods' IPv6 neighbours meanwhile, so the first
// pod, Ready through IPv4, would not be reached over IPv6 (TestMigration
// saw a request fail just after each move back to the baseline).
func (n *kubeNode) baselineRoutes(nodes []*kubeNode) {
	t := n.t
	t.Helper()
	n.baselineBridge()
	for _, o := range nodes {
		if o == n {
			continue
		}
		for _, p := range o.podCIDRs {
			via := o.addr4
			if p.Addr().Is6() {
				via = o.addr6
			}
			run(t, "ip", ipFamily(via), "-n", n.netns, "route", "add", p.String(), "via", via.String())
		}
	}
	var masquerade strings.Builder
	for _, p := range n.podCIDRs {
		proto, cluster := "ip", clusterCIDR4
		if p.Addr().Is6() {
			proto, cluster = "ip6", clusterCIDR6
		}
		fmt.Fprintf(&masquerade, "\t\t%[1]s saddr %[2]s %[1]s daddr != %[3]s masquerade\n", proto, p, cluster)
	}
	rules := fmt.Sprintf(`table inet %s {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
%s	}
}
`, baselineTable, masquerade.String())
	cmd := exec.Command("ip", "netns", "exec", n.netns, nftPath(t), "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f in %s: %v\n%s\n%s", n.netns, err, out, rules)
	}
}

// nftPath returns the nft binary (Debian's nftables puts it in /usr/sbin,
// which PATH may lack).
func nftPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nft"); err == nil {
		return p
	}
	if p, err := exec.LookPath("/usr/sbin/nft"); err == nil {
		return p
	}
	t.Fatal("nft not found (Debian package nftables)")
	return ""
}

// conformanceControllers are the kube-controller-manager controllers a
// conformance cluster runs besides controllers: what the selected specs
// use (Services' Endpoints and EndpointSlices, mirrored ones too;
// ReplicationControllers, StatefulSets and Jobs that some specs create;
// garbage collection of pods; the TTL annotation; taint eviction; the
// ServiceCIDR's finalizer; the aggregated roles admin, edit, view).
var conformanceControllers = []string{
	"endpoints-controller", "endpointslice-controller", "endpointslice-mirroring-controller",
	"replicationcontroller-controller", "statefulset-controller", "job-controller",
	"pod-garbage-collector-controller", "ttl-controller", "taint-eviction-controller",
	"service-cidr-controller", "clusterrole-aggregation-controller",
}

// conformanceAllControllers are those of every [Conformance] spec (make
// conformance-all): conformanceControllers and what the specs of other
// SIGs use (ResourceQuota status, CronJobs, PodDisruptionBudgets,
// PersistentVolume binding and protection, the finalizer of
// VolumeAttributesClasses). The first run lacked them
// (docs/results/conformance.md).
var conformanceAllControllers = append(slices.Clone(conformanceControllers),
	"resourcequota-controller", "cronjob-controller", "disruption-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller", "volumeattributesclass-protection-controller",
)
