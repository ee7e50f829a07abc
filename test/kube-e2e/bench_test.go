package kubee2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// benchReplicas is the Deployment's size in BenchmarkDeployment20 (the
// kubelet's maxPods is 30: nri-podnet's DaemonSet pod fits beside them).
const benchReplicas = 20

// cniPluginsVersion is the CNI plugins release test/containerd-e2e uses;
// its bridge, host-local and loopback are looked for in NRINET_CNI_BIN,
// else in $TMPDIR/nrinet-cni-plugins-<version> (where .ci/run and
// test/containerd-e2e put them).
const cniPluginsVersion = "v1.10.0"

// roundsEnv sets how many rounds BenchmarkDeployment20 runs: each round
// runs every variant once, in turn, so that the variants' samples
// interleave (make bench-kube sets it to BENCH_COUNT).
const roundsEnv = "NRINET_KUBE_BENCH_ROUNDS"

// upstream is stock containerd (hack/containerd.sh upstream), found or
// built once.
var upstream struct {
	once sync.Once
	bin  string
	err  error
}

// upstreamContainerdBin returns the directory of stock containerd's
// binaries, running hack/containerd.sh with NRINET_CONTAINERD_NRI=upstream
// the first time.
func upstreamContainerdBin(t testing.TB) string {
	t.Helper()
	upstream.once.Do(func() {
		cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "containerd.sh"))
		cmd.Env = append(os.Environ(), "NRINET_CONTAINERD_NRI=upstream")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			upstream.err = fmt.Errorf("hack/containerd.sh (NRINET_CONTAINERD_NRI=upstream): %v\n%s", err, stderr.String())
			return
		}
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "NRINET_CONTAINERD_BIN="); ok {
				upstream.bin = v
			}
		}
		if upstream.bin == "" {
			upstream.err = fmt.Errorf("hack/containerd.sh (upstream) printed no NRINET_CONTAINERD_BIN: %q", stdout.String())
		}
	})
	if upstream.err != nil {
		t.Fatal(upstream.err)
	}
	return upstream.bin
}

// cniBin returns the directory of the CNI plugins, checking that bridge,
// host-local, loopback and portmap are there.
func cniBin(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("NRINET_CNI_BIN")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nrinet-cni-plugins-"+cniPluginsVersion)
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("CNI plugin %s not in %s (set NRINET_CNI_BIN, or run make e2e-containerd once): %v", p, dir, err)
		}
	}
	return dir
}

// adjustContainerdConfig changes stage 3's containerd configuration for
// the node's options: with metrics, a [metrics] address on port 1338 of
// the node's underlay IPv4 address; with cni, no network mode nri and no
// required network plugin, and CRI's CNI configuration directory (empty
// until writeCNIConfig) and the CNI plugins instead; with dropIns, the
// imports of the node's drop-in directory (importDropIns).
func (n *kubeNode) adjustContainerdConfig(conf string) string {
	t := n.t
	t.Helper()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	if n.opts.cni {
		for _, line := range []string{"    required_network_plugins = [\"podnet\"]\n", "    network_mode = 'nri'\n"} {
			if !strings.Contains(conf, line) {
				t.Fatalf("containerd configuration lacks %q, which the cni option removes", line)
			}
			conf = strings.Replace(conf, line, "", 1)
		}
		confDir := filepath.Join(n.dir, "cni-conf")
		if err := os.MkdirAll(confDir, 0o700); err != nil {
			t.Fatal(err)
		}
		conf += fmt.Sprintf(`
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%s]
    conf_dir = %s
    max_conf_num = 1
`, q(cniBin(t)), q(confDir))
	}
	if n.opts.dropIns {
		conf = n.importDropIns(conf)
	}
	if n.opts.metrics {
		// On the node's underlay address, which the test reaches from the
		// host's namespace; nothing else of the namespace uses the port.
		n.metricsAddr = netip.AddrPortFrom(n.addr4, 1338).String()
		conf += fmt.Sprintf("\n[metrics]\n  address = %s\n", q(n.metricsAddr))
	}
	return conf
}

// cniNetName is the CNI network of a node with the cni option, named
// after the node: libcni's cached results carry it, and each node checks
// its own (checkCNIResultsGone).
func (n *kubeNode) cniNetName() string { return n.name + "-cni" }

// writeCNIConfig writes the bridge conflist of a node with the cni option:
// test/containerd-e2e's (bridge + host-local, no masquerading) with one
// range and one default route per pod CIDR of the Node, with host-local's state under the node's
// directory; with cniServices, hairpin mode and portmap (nftables) too. containerd loads it (it watches its conf_dir) and reports
// NetworkReady, as a cluster network daemon writing its conflist does.
func (n *kubeNode) writeCNIConfig() {
	t := n.t
	var ranges, routes []any
	for _, c := range n.podCIDRs {
		ranges = append(ranges, []any{map[string]any{"subnet": c.String()}})
		dst := "0.0.0.0/0"
		if c.Addr().Is6() {
			dst = "::/0"
		}
		routes = append(routes, map[string]any{"dst": dst})
	}
	bridge := map[string]any{
		"type": "bridge", "bridge": "nrkc" + n.cp.token, "isGateway": true, "ipMasq": false,
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": filepath.Join(n.dir, "cni-ipam"),
			"ranges":  ranges,
			"routes":  routes,
		},
	}
	plugins := []any{bridge}
	if n.opts.cniServices {
		bridge["hairpinMode"] = true
		plugins = append(plugins, map[string]any{
			"type": "portmap", "backend": "nftables", "capabilities": map[string]any{"portMappings": true},
		})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       n.cniNetName(),
		"plugins":    plugins,
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(n.dir, "cni-conf", "10-"+n.cniNetName()+".conflist"), string(b))
}

// checkCNIResultsGone fails the test for a result libcni cached for the
// node's CNI network that is left once the node's pods are gone: libcni
// caches each attachment's result under /var/lib/cni/results, named after
// the network (which carries the token) and the sandbox.
func (n *kubeNode) checkCNIResultsGone() {
	entries, _ := os.ReadDir("/var/lib/cni/results")
	for _, e := range entries {
		if strings.Contains(e.Name(), n.cniNetName()) {
			n.t.Errorf("left behind: /var/lib/cni/results/%s", e.Name())
		}
	}
}

// metricSums scrapes the node's containerd metrics and returns, for each
// of names (a histogram, without _sum), the sum of its _sum over every
// label set.
func (n *kubeNode) metricSums(names ...string) map[string]float64 {
	t := n.t
	t.Helper()
	resp, err := http.Get("http://" + n.metricsAddr + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sums := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(l, name+"_sum")
			if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("containerd metrics: %q: %v", l, err)
			}
			sums[name] += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// containerd's timers behind the benchmark's extra metrics: the network
// setup (CNI ADD, or in network mode nri the NRI call returning the
// network; the timer adds "_seconds" to a name that has it), the sandbox's
// creation in runc, and the container's creation (with the image's
// unpacking, the first time) and start.
const (
	metricNetSetup  = `containerd_cri_network_plugin_operations_duration_seconds_seconds`
	metricSandbox   = "containerd_cri_sandbox_runtime_create_seconds"
	metricCtrCreate = "containerd_cri_container_create_seconds"
	metricCtrStart  = "containerd_cri_container_start_seconds"
)

// netSetupSum returns the sum of the network setup timer, set_up_pod only.
func (n *kubeNode) netSetupSum() float64 {
	t := n.t
	t.Helper()
	resp, err := http.Get("http://" + n.metricsAddr + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), metricNetSetup+`_sum{operation_type="set_up_pod"} `); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0 // no pod set up yet
}

// BenchmarkDeployment20 measures, on a real node (kubelet v1.37, one
// control plane for the whole run), the time from the creation of a
// 20-replica Deployment of busybox pods (client-go, as kubectl apply
// creates it) until a watch sees all 20 pods Running, for two runtimes:
//
//   - network=cni-bridge: stock containerd in its CNI mode with a bridge
//     conflist (bridge + host-local, dual-stack) on the Node's pod CIDRs;
//   - network=nri-podnet: containerd on nrinet in network mode nri with
//     nri-podnet, started by hand as stage 3 does.
//
// Each sample starts a fresh node (namespace, containerd with the images
// imported, kubelet, Node Ready), untimed, and stops it after the
// Deployment is deleted and its pods and sandboxes are gone (untimed): the
// 20 pods include unpacking the pause and busybox images once. Each pod
// must be Running with one IPv4 and one IPv6 address in the Node's pod
// CIDRs. Extra metrics, per pod, from containerd's timers: net-ms (the
// network setup), sandbox-ms (runc's sandbox creation), ctr-ms (container
// create + start); sched-s is the time until the watch saw every pod
// bound to the node. Rounds (NRINET_KUBE_BENCH_ROUNDS, default 1)
// interleave the variants; the second round's names get go test's #01
// suffix, which make bench-kube strips for benchstat:
//
//	NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=5 go test -run '^$' -bench Deployment20 -benchtime 1x -count 1 .
func BenchmarkDeployment20(b *testing.B) {
	skipUnlessEnabled(b)
	prepareStage3(b)
	upstreamContainerdBin(b)
	cniBin(b)
	rounds := 1
	if s := os.Getenv(roundsEnv); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			b.Fatalf("%s=%q: want a positive number", roundsEnv, s)
		}
	}
	cp := startControlPlane(b)
	cp.startScheduler()
	nodes := 0
	for range rounds {
		for _, v := range []struct {
			name string
			opts kubeNodeOptions
		}{
			{"network=cni-bridge", kubeNodeOptions{cni: true, metrics: true}},
			{"network=nri-podnet", kubeNodeOptions{metrics: true}},
		} {
			b.Run(v.name, func(b *testing.B) {
				nodes++
				if nodes > 99 {
					b.Fatal("more than 99 nodes: the node's veth name would exceed 15 characters")
				}
				benchDeployment(b, cp.with(b), "b"+strconv.Itoa(nodes), v.opts)
			})
		}
	}
}

// benchDeployment is one sample of BenchmarkDeployment20 per iteration
// (b.N, normally 1) on a node of its own.
func benchDeployment(b *testing.B, cp *controlPlane, suffix string, opts kubeNodeOptions) {
	b.StopTimer()
	n := startKubeNodeWith(b, cp, suffix, opts)
	ctx := b.Context()
	ns := "nrke-" + cp.token + "-" + suffix
	if _, err := cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "service account "+ns+"/default", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, err := cp.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	b.ResetTimer()
	var sched time.Duration
	perPod := map[string]float64{}
	for i := range b.N {
		before := n.metricSums(metricSandbox, metricCtrCreate, metricCtrStart)
		netBefore := n.netSetupSum()
		s := n.runDeployment(b, ns, fmt.Sprintf("busybox-%d", i))
		sched += s
		netAfter := n.netSetupSum()
		after := n.metricSums(metricSandbox, metricCtrCreate, metricCtrStart)
		perPod["net-ms"] += (netAfter - netBefore) * 1e3 / benchReplicas
		perPod["sandbox-ms"] += (after[metricSandbox] - before[metricSandbox]) * 1e3 / benchReplicas
		perPod["ctr-ms"] += (after[metricCtrCreate] - before[metricCtrCreate] + after[metricCtrStart] - before[metricCtrStart]) * 1e3 / benchReplicas
	}
	for unit, v := range perPod {
		b.ReportMetric(v/float64(b.N), unit+"/pod")
	}
	b.ReportMetric(sched.Seconds()/float64(b.N), "sched-s/op")
}

// podTimes are when the watch first saw a pod in each state, since the
// Deployment's creation.
type podTimes struct {
	seen, bound, sandbox, running time.Duration
}

// runDeployment creates a Deployment of benchReplicas busybox pods pinned
// to the node, with the timer running until a watch sees them all Running
// (and returns how long until it saw them all bound), checks their
// addresses, then, untimed, deletes it and waits until its pods and their
// sandboxes are gone.
func (n *kubeNode) runDeployment(b *testing.B, ns, name string) time.Duration {
	ctx := b.Context()
	cp := n.cp
	labels := map[string]string{"app": name}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](benchReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: n.name},
					Containers: []corev1.Container{{
						Name: "busybox", Image: busyboxRef, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "3600"},
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
				},
			},
		},
	}
	w, err := cp.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	times := map[string]*podTimes{}
	last := map[string]*corev1.Pod{}
	running := 0
	var allBound time.Duration
	timeout := time.NewTimer(podsRunningTimeout)
	defer timeout.Stop()

	b.StartTimer()
	start := time.Now()
	if _, err := cp.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for running < benchReplicas {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch of %s's pods ended with %d of %d Running", name, running, benchReplicas)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			now := time.Since(start)
			pt := times[p.Name]
			if pt == nil {
				pt = &podTimes{seen: now}
				times[p.Name] = pt
			}
			last[p.Name] = p
			if pt.bound == 0 && p.Spec.NodeName != "" {
				pt.bound = now
				if bound := countIf(times, func(t *podTimes) bool { return t.bound != 0 }); bound == benchReplicas {
					allBound = now
				}
			}
			for _, c := range p.Status.Conditions {
				if pt.sandbox == 0 && c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
					pt.sandbox = now
				}
			}
			if pt.running == 0 && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pt.running = now
				running++
			}
		case <-timeout.C:
			b.Fatalf("%d of %d pods of %s Running after %v", running, benchReplicas, name, podsRunningTimeout)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	w.Stop()

	// Each pod: one IPv4 and one IPv6 address, in the Node's pod CIDRs.
	for _, p := range last {
		var ips []netip.Addr
		for _, ip := range p.Status.PodIPs {
			a, err := netip.ParseAddr(ip.IP)
			if err != nil {
				b.Fatalf("pod %s: status.podIPs %v: %v", p.Name, p.Status.PodIPs, err)
			}
			ips = append(ips, a)
		}
		if len(ips) != 2 || !ips[0].Is4() || !ips[1].Is6() || !n.podCIDRs[0].Contains(ips[0]) || !n.podCIDRs[1].Contains(ips[1]) {
			b.Errorf("pod %s: status.podIPs %v, want an IPv4 address of %s and an IPv6 one of %s", p.Name, ips, n.podCIDRs[0], n.podCIDRs[1])
		}
	}
	b.Logf("%s: %d pods Running in %v (all bound %v); per pod, since the Deployment's creation: %s",
		n.name, benchReplicas, elapsed.Round(time.Millisecond), allBound.Round(time.Millisecond), podTimesSummary(times))

	fg := metav1.DeletePropagationForeground
	if err := cp.client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the pods of "+name+" and their sandboxes to be gone", podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := cp.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err.Error()
		}
		// The Deployment's sandboxes only: nri-podnet's DaemonSet pod
		// stays.
		out, errOut, err := n.crictl("pods", "-q", "--namespace", "^"+ns+"$")
		if err != nil {
			return false, errOut
		}
		sandboxes := len(strings.Fields(out))
		return len(list.Items) == 0 && sandboxes == 0, fmt.Sprintf("%d pods, %d sandboxes left", len(list.Items), sandboxes)
	})
	return allBound
}

// countIf counts the pods whose times satisfy f.
func countIf(times map[string]*podTimes, f func(*podTimes) bool) int {
	c := 0
	for _, t := range times {
		if f(t) {
			c++
		}
	}
	return c
}

// podTimesSummary gives the median and the maximum over the pods of each
// state's time.
func podTimesSummary(times map[string]*podTimes) string {
	var out []string
	for _, s := range []struct {
		name string
		get  func(*podTimes) time.Duration
	}{
		{"seen", func(t *podTimes) time.Duration { return t.seen }},
		{"bound", func(t *podTimes) time.Duration { return t.bound }},
		{"sandbox ready", func(t *podTimes) time.Duration { return t.sandbox }},
		{"running", func(t *podTimes) time.Duration { return t.running }},
	} {
		var ds []time.Duration
		for _, t := range times {
			ds = append(ds, s.get(t))
		}
		slices.Sort(ds)
		if len(ds) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s median %v max %v", s.name,
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}
