package kubee2e

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMigration is issue 32's stage (make e2e-migration, and make
// e2e-kube; docs/install.md, "Migrating a live cluster, node by node"): a
// two-node cluster of real kubelets starts on the baseline network (stock
// containerd in its CNI mode, the reference plugins, routes between the
// nodes); a Deployment of two web servers, one per node, behind a
// dual-stack ClusterIP Service, and a client pod through whose network
// namespace the test requests the Service every probeInterval, throughout.
// The runbook then moves node a, then node b, to nrinet (containerd on
// nrinet in network mode nri, nri-podnet's DaemonSet), and both back to
// CNI, one step at a time as the page writes them (migrationRunbook).
//
// Checked and printed: no request fails outside a drain window (from the
// start of a node's kubectl drain until the API shows its replacement
// backend Ready; those that fail inside one are counted and listed);
// every pod keeps its addresses until it is removed
// (the API's, and eth0's in its network namespace, after every step);
// pods of the two networks reach each other, pod to pod and through the
// Service, across the nodes, while the cluster is mixed; nothing of a
// network is left on a node that left it (leases, veths, bridge, routes
// to pod CIDRs, nftables tables); the DaemonSet's pod runs only on the
// nodes opted in, and never restarts.
func TestMigration(t *testing.T) {
	skipUnlessEnabled(t)
	start := time.Now()
	once, toNrinet, toCNI := migrationRunbook(t)
	cp := startControlPlaneWith(t, controlPlaneOptions{extraControllers: migrationControllers})
	c := launchCluster(t, cp, networkBaseline, kubeNodeOptions{dropIns: true})
	m := newMigration(t, c)
	m.deployWorkload()
	m.probe = startProbe(m)
	t.Cleanup(m.probe.stop) // if the test fails before it is stopped
	t.Logf("cluster up, workload Ready, probe started, in %v", time.Since(start).Round(time.Millisecond))

	m.runSteps(nil, once)
	for _, n := range c.nodes {
		m.moveNode(n, networkNrinet, toNrinet)
	}
	for _, n := range c.nodes {
		m.moveNode(n, networkBaseline, toCNI)
	}
	// A few more requests on the cluster as it began.
	n0 := m.probe.count()
	waitFor(t, fmt.Sprintf("%d more requests of the probe", probeTail), 30*time.Second, probeInterval, func() (bool, string) {
		return m.probe.count() >= n0+probeTail, fmt.Sprintf("%d made", m.probe.count()-n0)
	})
	m.probe.stop()
	m.report()
	t.Logf("migration of 2 nodes to nrinet and back in %v", time.Since(start).Round(time.Second))
}

// migrationControllers are the controllers of the stage's control plane
// besides controllers: the conformance cluster's (Services' endpoints
// among them) and the disruption controller, which keeps the
// PodDisruptionBudget's status that kubectl drain's evictions check.
var migrationControllers = append(slices.Clone(conformanceControllers), "disruption-controller")

// The stage's workload.
const (
	backendPort = 8080
	servicePort = 80
	// backendCommand serves the pod's name (its host name) on
	// backendPort, both families, with busybox's httpd, and stops it on
	// SIGTERM (the shell, the container's PID 1, has a handler; httpd as
	// PID 1 would ignore the signal until the grace period's SIGKILL).
	backendCommand = "busybox mkdir -p /www && hostname > /www/index.html && { busybox httpd -f -p 8080 -h /www & trap 'kill $!; exit 0' TERM; wait; }"
	// replacementTimeout bounds how long a drained node's replacement
	// backend takes to be Ready after the uncordon.
	replacementTimeout = 2 * time.Minute
	// podnetOverlayDir is the overlay the runbook applies; the stage
	// applies the test's overlay on top of it (podnetOverlay).
	podnetOverlayDir = "deploy/overlays/nri-podnet"
)

// A migration is the stage's state: the cluster, its workload, what each
// node runs, and what was measured.
type migration struct {
	t  *testing.T
	c  *cluster
	cp *controlPlane
	ns string
	// byName are the nodes by Node name; network what each runs now.
	byName  map[string]*kubeNode
	network map[string]clusterNetwork
	// serviceIPs are the Service's cluster IPs, IPv4 then IPv6.
	serviceIPs []netip.Addr
	probe      *probe
	// windows are the drain windows, steps every step run, pods every
	// pod seen, cross the cross-node checks.
	windows []drainWindow
	steps   []stepRecord
	pods    map[string]*seenPod
	cross   []crossRecord
	// addressChecks counts the checks of a pod's addresses (API and
	// eth0); dsChecks the checks of the DaemonSet's pods.
	addressChecks, dsChecks int
	leaks                   []string
}

// A drainWindow is the time from the start of a node's kubectl drain
// until the API first shows the node's new backend pod Ready (polled
// every 100 ms).
type drainWindow struct {
	node       string
	from, to   clusterNetwork
	start, end time.Time
}

// A stepRecord is one step of the runbook as run.
type stepRecord struct {
	name, node string
	took       time.Duration
}

func newMigration(t *testing.T, c *cluster) *migration {
	m := &migration{t: t, c: c, cp: c.cp, ns: "nrke-" + c.cp.token, byName: map[string]*kubeNode{},
		network: map[string]clusterNetwork{}, pods: map[string]*seenPod{}}
	for _, n := range c.nodes {
		m.byName[n.name] = n
		m.network[n.name] = networkBaseline
	}
	return m
}

// migrationStepFuncs are the stage's steps by the runbook's names: what
// the node's operator does on the node (as the harness does it: no
// systemd, a node of the test's) and the checks that follow, after the
// page's kubectl lines ran (run).
var migrationStepFuncs = map[string]func(m *migration, n *kubeNode, run func()){
	"apply-daemonset": (*migration).applyDaemonSet,
	"install-runtime": (*migration).installRuntime,
	"drain":           func(m *migration, n *kubeNode, run func()) { run() },
	"switch-to-nri":   (*migration).switchToNRI,
	"clear-cni":       (*migration).clearCNI,
	"label":           (*migration).label,
	"uncordon":        func(m *migration, n *kubeNode, run func()) { run() },
	"unlabel":         (*migration).unlabel,
	"switch-to-cni":   (*migration).switchToCNI,
	"uninstall":       (*migration).uninstall,
	"restore-cni":     func(m *migration, n *kubeNode, run func()) { n.baselineRoutes(m.c.nodes) },
}

// moveNode moves node n to network to with the runbook's steps, then
// waits for its replacement backend (the drain window's end) and checks
// traffic between the nodes' pods.
func (m *migration) moveNode(n *kubeNode, to clusterNetwork, steps []runbookStep) {
	t := m.t
	w := drainWindow{node: n.name, from: m.network[n.name], to: to}
	for i, s := range steps {
		if s.name == "drain" {
			w.start = time.Now()
		}
		m.runSteps(n, steps[i:i+1])
	}
	if w.start.IsZero() {
		t.Fatalf("the steps %v have no drain", steps)
	}
	p := m.waitBackend(n)
	w.end = time.Now()
	m.windows = append(m.windows, w)
	t.Logf("%s: %s → %s; replacement backend %s Ready %v after the drain began", n.name, w.from, w.to, p.Name, w.end.Sub(w.start).Round(time.Millisecond))
	m.checkPods("replacement Ready on " + n.name)
	m.crossChecks(fmt.Sprintf("%s → %s", n.name, to))
}

// runSteps runs steps on node n (nil: the cluster's), each the page's
// kubectl lines (<node> and the overlay filled in) then its function,
// and after each checks every pod's addresses and the DaemonSet.
func (m *migration) runSteps(n *kubeNode, steps []runbookStep) {
	t := m.t
	t.Helper()
	for _, s := range steps {
		start := time.Now()
		run := func() {
			for _, args := range s.kubectl {
				args = slices.Clone(args)
				for i, a := range args {
					switch {
					case a == "<node>" && n != nil:
						args[i] = n.name
					case a == podnetOverlayDir:
						args[i] = m.cp.podnetOverlay(false, false)
					}
				}
				out := m.cp.kubectl(args...)
				t.Logf("kubectl %s:\n%s", strings.Join(args, " "), strings.TrimSpace(out))
			}
		}
		migrationStepFuncs[s.name](m, n, run)
		name := "(cluster)"
		if n != nil {
			name = n.name
		}
		m.steps = append(m.steps, stepRecord{name: s.name, node: name, took: time.Since(start)})
		t.Logf("step %s on %s: %v", s.name, name, time.Since(start).Round(time.Millisecond))
		m.checkPods(s.name)
		m.checkDaemonSet(s.name)
	}
}

// applyDaemonSet is the runbook's first step: the DaemonSet applied
// once, while no Node has the label; it must run no pod anywhere.
func (m *migration) applyDaemonSet(_ *kubeNode, run func()) {
	t := m.t
	run()
	for _, n := range m.c.nodes {
		n.overlay = m.cp.podnetOverlay(false, false)
	}
	waitFor(t, "the DaemonSet observed with no Node to run on", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		ds, err := m.cp.client.AppsV1().DaemonSets(podnetNamespace).Get(t.Context(), "nri-podnet", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation {
			return false, "not yet observed"
		}
		if s.DesiredNumberScheduled != 0 || s.CurrentNumberScheduled != 0 {
			t.Fatalf("the DaemonSet wants %d pods (%d scheduled) on a cluster with no Node labelled %s", s.DesiredNumberScheduled, s.CurrentNumberScheduled, podNetworkLabel)
		}
		return true, ""
	})
}

// installRuntime puts containerd on nrinet in place of stock containerd
// on the node, in network mode cni (no drop-in yet), and restarts it: the
// pods run on, and the Node is Ready again.
func (m *migration) installRuntime(n *kubeNode, _ func()) {
	before := containerdVersion(m.t, n.containerdBin)
	n.containerdBin = stage3.containerdBin
	n.restart(n.containerd, n.runContainerd)
	n.waitReady()
	m.t.Logf("%s: %s → %s, network mode cni", n.name, before, containerdVersion(m.t, n.containerdBin))
}

// containerdVersion is containerd --version of the binaries in dir.
func containerdVersion(t testing.TB, dir string) string {
	out, err := exec.Command(filepath.Join(dir, "containerd"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd --version: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// switchToNRI installs nrinet's drop-in (contrib/, as docs/install.md
// copies it, with the node's NRI socket) and restarts containerd: network
// mode nri, NetworkReady false until nri-podnet joins.
func (m *migration) switchToNRI(n *kubeNode, _ func()) {
	t := m.t
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "nrinet-network-mode.toml"))
	if err != nil {
		t.Fatal(err)
	}
	const sock = `socket_path = "/var/run/nri/nri.sock"`
	if !strings.Contains(string(b), sock) {
		t.Fatalf("contrib/nrinet-network-mode.toml has no %s", sock)
	}
	writeFile(t, n.dropIn(), strings.Replace(string(b), sock, fmt.Sprintf("socket_path = %q", n.nriSock), 1))
	n.restart(n.containerd, n.runContainerd)
	waitFor(t, "containerd on "+n.name+" in network mode nri, waiting for podnet", kubeNodeReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		_, network, msg := n.criConditions()
		return !network && strings.Contains(msg, "podnet"), msg
	})
}

// clearCNI removes what the CNI network leaves on the drained node: the
// bridge (whose address is the first of the node's pod CIDR, which
// nri-podnet's bridge takes), and what the network's node agent made
// (here the test's baselineRoutes: routes to the other nodes' pod CIDRs,
// which nri-podnet leaves alone if another protocol's, and the
// masquerade). Then nothing of CNI may be left (leases, veths, routes to
// pod CIDRs, results, nftables tables).
func (m *migration) clearCNI(n *kubeNode, _ func()) {
	t := m.t
	deleteLink(t, n.netns, "nrkc"+m.cp.token)
	for _, o := range m.c.nodes {
		if o == n {
			continue
		}
		for _, p := range o.podCIDRs {
			via := o.addr4
			if p.Addr().Is6() {
				via = o.addr6
			}
			run(t, "ip", ipFamily(via), "-n", n.netns, "route", "del", p.String(), "via", via.String())
		}
	}
	run(t, "ip", "netns", "exec", n.netns, nftPath(t), "delete", "table", "inet", baselineTable)
	m.checkLeftNothing(n, networkBaseline)
}

// label opts the node in (the page's kubectl label, then rollout
// status): the DaemonSet's pod is Ready and the Node Ready.
func (m *migration) label(n *kubeNode, run func()) {
	run()
	p := n.waitPodnetPod("")
	m.network[n.name] = networkNrinet
	m.t.Logf("%s: nri-podnet's pod %s Ready, Node Ready", n.name, p.Name)
}

// unlabel opts the node out, once the drain let nri-podnet release every
// address (its metrics say none is in use): the DaemonSet's pod goes.
func (m *migration) unlabel(n *kubeNode, run func()) {
	m.waitAddressesReleased(n)
	run()
	n.waitPodnetGone()
}

// switchToCNI removes the drop-in and restarts containerd: network mode
// cni, and the Node Ready on its CNI configuration, which stayed.
func (m *migration) switchToCNI(n *kubeNode, _ func()) {
	if err := os.Remove(n.dropIn()); err != nil {
		m.t.Fatal(err)
	}
	n.restart(n.containerd, n.runContainerd)
	n.waitReady()
	m.network[n.name] = networkBaseline
}

// uninstall runs nri-podnet -uninstall with the ConfigMap's config.json
// in the node's namespace and removes its state directory (the
// DaemonSet's hostPath), as docs/deploy.md's uninstall does on a node;
// then nothing of nrinet may be left.
func (m *migration) uninstall(n *kubeNode, _ func()) {
	t := m.t
	cm, err := m.cp.client.CoreV1().ConfigMaps(podnetNamespace).Get(t.Context(), "nri-podnet-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(n.dir, "podnet-uninstall.json")
	writeFile(t, config, cm.Data["config.json"])
	out := run(t, "ip", "netns", "exec", n.netns, env.podnet, "-uninstall", "-config", config)
	t.Logf("%s: nri-podnet -uninstall:\n%s", n.name, strings.TrimSpace(out))
	if err := os.RemoveAll(n.podnetState); err != nil {
		t.Fatal(err)
	}
	m.checkLeftNothing(n, networkNrinet)
}

// dropIn is where nrinet's drop-in goes on the node (importDropIns).
func (n *kubeNode) dropIn() string {
	return filepath.Join(n.dir, "conf.d", "nrinet-network-mode.toml")
}

// importDropIns adds to containerd's configuration the imports of the
// node's drop-in directory, after its version line, as docs/install.md's
// config.toml imports /etc/containerd/conf.d/*.toml.
func (n *kubeNode) importDropIns(conf string) string {
	t := n.t
	const version = "version = 3\n"
	if !strings.HasPrefix(conf, version) {
		t.Fatalf("containerd configuration does not start with %q", version)
	}
	if err := os.MkdirAll(filepath.Dir(n.dropIn()), 0o700); err != nil {
		t.Fatal(err)
	}
	return version + fmt.Sprintf("imports = [%q]\n", filepath.Join(filepath.Dir(n.dropIn()), "*.toml")) + conf[len(version):]
}
