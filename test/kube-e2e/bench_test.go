package kubee2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// A deploymentBench is the size of a Deployment benchmark: the
// Deployment's replicas, the kubelet's maxPods (room for nri-podnet's
// DaemonSet pod beside them), and how long the pods may take to be
// Running, and to be gone once the Deployment is deleted.
type deploymentBench struct {
	replicas, maxPods int
	running, gone     time.Duration
}

var (
	// deployment20 is BenchmarkDeployment20's (make bench-kube).
	deployment20 = deploymentBench{replicas: 20, maxPods: 30, running: podsRunningTimeout, gone: podsGoneTimeout}
	// deployment100 is BenchmarkDeployment100's (make bench-density): the
	// kubelet's default maxPods, 110, holds the 100 and the DaemonSet's
	// pod; the Node's pod CIDRs (a /24 and a /64), from which both
	// host-local and nri-podnet allocate, hold 253 and more.
	deployment100 = deploymentBench{replicas: 100, maxPods: 110, running: 5 * time.Minute, gone: 4 * time.Minute}
)

// roundsEnv sets how many rounds BenchmarkDeployment20 and
// BenchmarkDeployment100 run: each round runs every variant once, in
// turn, so that the variants' samples interleave (make bench-kube sets it
// to BENCH_COUNT, make bench-density to BENCH_DENSITY_ROUNDS).
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
		dir = filepath.Join(os.TempDir(), "nrinet-cni-plugins-"+pins.CNIPlugins)
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

// cniBridge is the bridge of the node's CNI conflist (writeCNIConfig).
func (n *kubeNode) cniBridge() string { return "nrkc" + n.cp.token }

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
		"type": "bridge", "bridge": n.cniBridge(), "isGateway": true, "ipMasq": false,
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
//     nri-podnet, deployed as stage 3 deploys it.
//
// Each sample starts a fresh node (namespace, containerd with the images
// imported, kubelet, Node Ready), untimed, and stops it after the
// Deployment is deleted and its pods and sandboxes are gone (untimed): the
// 20 pods include unpacking the pause and busybox images once. Each pod
// must be Running with one IPv4 and one IPv6 address in the Node's pod
// CIDRs, and no pod may fail (deploymentRun.check). Extra metrics, per
// pod, from containerd's timers: net-ms (the network setup), sandbox-ms
// (runc's sandbox creation), ctr-ms (container create + start); on
// nri-podnet's node podnet-ms (nri-podnet's own setup timer);
// created-s and sched-s are the times until the watch saw every pod
// created and bound to the node. Pod start latency, each pod's from its
// creation as the test's watch saw it to the watch seeing it Running:
// p50-ms, p99-ms and max-ms (nearest rank); the kubelet's own
// (kubelet_pod_start_sli_duration_seconds, from its log, checked against
// its histogram): sli-p50-ms and sli-p99-ms. Rounds
// (NRINET_KUBE_BENCH_ROUNDS, default 1) interleave the variants; the
// second round's names get go test's #01 suffix, which make bench-kube
// and make bench-density strip for benchstat:
//
//	NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=5 go test -run '^$' -bench 'Deployment20$' -benchtime 1x -count 1 .
func BenchmarkDeployment20(b *testing.B) { benchDeployments(b, deployment20) }

// BenchmarkDeployment100 is BenchmarkDeployment20 with 100 replicas and the
// kubelet's maxPods at 110 (make bench-density): pod start latency at the
// density of a full node.
//
//	NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=3 go test -run '^$' -bench 'Deployment100$' -benchtime 1x -count 1 .
func BenchmarkDeployment100(b *testing.B) { benchDeployments(b, deployment100) }

// benchDeployments runs the rounds of a Deployment benchmark of size on
// one control plane, each variant's sample on a node of its own.
func benchDeployments(b *testing.B, size deploymentBench) {
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
	// One hold of the kubelet host lock for every round: another suite's
	// cluster comes before or after the run, not between its samples; and
	// taken before the control plane starts, so that none idles while the
	// run waits for it.
	lockKubeletHost(b)
	cp := startControlPlane(b)
	cp.startScheduler()
	nodes := 0
	for range rounds {
		for _, v := range []struct {
			name string
			opts kubeNodeOptions
		}{
			{"network=cni-bridge", kubeNodeOptions{cni: true, metrics: true, maxPods: size.maxPods, hostLocked: true}},
			{"network=nri-podnet", kubeNodeOptions{metrics: true, maxPods: size.maxPods, hostLocked: true}},
		} {
			b.Run(v.name, func(b *testing.B) {
				nodes++
				if nodes > 99 {
					b.Fatal("more than 99 nodes: the node's veth name would exceed 15 characters")
				}
				benchDeployment(b, cp.with(b), "b"+strconv.Itoa(nodes), v.opts, size)
			})
		}
	}
}

// benchDeployment is one sample of a Deployment benchmark per iteration
// (b.N, normally 1) on a node of its own.
func benchDeployment(b *testing.B, cp *controlPlane, suffix string, opts kubeNodeOptions, size deploymentBench) {
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
	var sched, created time.Duration
	var starts, slis []time.Duration
	var retries, disconnects int
	perPod := map[string]float64{}
	for i := range b.N {
		before := n.metricSums(metricSandbox, metricCtrCreate, metricCtrStart)
		netBefore := n.netSetupSum()
		var podnetBefore histogram
		if !opts.cni {
			podnetBefore = n.podnetSetup()
		}
		r := n.runDeployment(b, ns, fmt.Sprintf("busybox-%d", i), size)
		sched += r.allBound
		created += r.allCreated
		starts = append(starts, r.starts...)
		slis = append(slis, r.slis...)
		retries += r.retries
		disconnects += r.disconnects
		netAfter := n.netSetupSum()
		after := n.metricSums(metricSandbox, metricCtrCreate, metricCtrStart)
		reps := float64(size.replicas)
		perPod["net-ms"] += (netAfter - netBefore) * 1e3 / reps
		perPod["sandbox-ms"] += (after[metricSandbox] - before[metricSandbox]) * 1e3 / reps
		perPod["ctr-ms"] += (after[metricCtrCreate] - before[metricCtrCreate] + after[metricCtrStart] - before[metricCtrStart]) * 1e3 / reps
		if !opts.cni {
			d := n.podnetSetup().sub(podnetBefore)
			// More when the runtime retried a pod's setup (a sandbox
			// created again).
			if int(d.count) < size.replicas {
				b.Errorf("nri-podnet's setup timer counted %v setups, want at least %d", d.count, size.replicas)
			}
			perPod["podnet-ms"] += d.sum * 1e3 / reps
		}
	}
	for unit, v := range perPod {
		b.ReportMetric(v/float64(b.N), unit+"/pod")
	}
	b.ReportMetric(sched.Seconds()/float64(b.N), "sched-s/op")
	b.ReportMetric(created.Seconds()/float64(b.N), "created-s/op")
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(starts, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(starts, 99)), "p99-ms")
	b.ReportMetric(ms(percentile(starts, 100)), "max-ms")
	b.ReportMetric(ms(percentile(slis, 50)), "sli-p50-ms")
	b.ReportMetric(ms(percentile(slis, 99)), "sli-p99-ms")
	b.ReportMetric(float64(retries)/float64(b.N), "retries/op")
	if !opts.cni {
		b.ReportMetric(float64(disconnects)/float64(b.N), "disconnects/op")
	}
}

// pluginDisconnects returns the lines of containerd's log (on nrinet) in
// which the runtime disconnected a plugin, with the reason; stock
// containerd has none.
func (n *kubeNode) pluginDisconnects() []string {
	var out []string
	for l := range strings.Lines(n.containerd.log.String()) {
		if strings.Contains(l, `msg="plugin disconnected`) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// podnetSetup reads nri-podnet's setup timer
// (nrinet_podnet_setup_duration_seconds) from its /metrics on the node
// (the DaemonSet's -http-address, port 9465 of the node's address).
func (n *kubeNode) podnetSetup() histogram {
	t := n.t
	t.Helper()
	resp, err := http.Get("http://" + netip.AddrPortFrom(n.addr4, 9465).String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHistogram(string(body), "nrinet_podnet_setup_duration_seconds")
	if err != nil {
		t.Fatalf("nri-podnet's metrics on %s: %v", n.name, err)
	}
	return h
}

// kubeletHistogram reads histogram name from the kubelet's /metrics,
// through the API server's proxy to the node (as kubectl get --raw
// /api/v1/nodes/<node>/proxy/metrics does).
func (n *kubeNode) kubeletHistogram(name string) histogram {
	t := n.t
	t.Helper()
	body, err := n.cp.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.name, "proxy", "metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the kubelet's metrics on %s: %v", n.name, err)
	}
	h, err := parseHistogram(string(body), name)
	if err != nil {
		t.Fatalf("the kubelet's metrics on %s: %v", n.name, err)
	}
	return h
}

// podTimes are when the watch first saw a pod in each state, since the
// Deployment's creation.
type podTimes struct {
	seen, bound, sandbox, running time.Duration
}

// A deploymentRun is what runDeployment measured: since the Deployment's
// creation, when the watch had seen every pod created and every pod
// bound; per pod, the start latency the test saw (from the watch seeing
// the pod created to the watch seeing it Running) and the kubelet's SLI
// (of the pods the kubelet logged one for).
type deploymentRun struct {
	allCreated, allBound time.Duration
	starts, slis         []time.Duration
	// retries counts the kubelet's sandbox creations that failed and were
	// retried (FailedCreatePodSandBox events, with their counts);
	// disconnects the runtime's "plugin disconnected" log lines during
	// the run (containerd on nrinet drops a plugin that answers late or
	// whose connection breaks, and the plugin reconnects).
	retries, disconnects int
}

// runDeployment creates a Deployment of size.replicas busybox pods pinned
// to the node, with the timer running until a watch sees them all Running,
// checks their addresses and that none failed, reads the kubelet's SLI of
// each (its log, checked against its histogram), then, untimed, deletes
// the Deployment and waits until its pods and their sandboxes are gone.
func (n *kubeNode) runDeployment(b *testing.B, ns, name string, size deploymentBench) deploymentRun {
	ctx := b.Context()
	cp := n.cp
	labels := map[string]string{"app": name}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(size.replicas)),
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
					// The node's resolv.conf: the kubelet has no clusterDNS
					// here, and with ClusterFirst it warns (an event per
					// pod) and falls back to this.
					DNSPolicy: corev1.DNSDefault,
				},
			},
		},
	}
	sliBefore := n.kubeletHistogram(metricPodStartSLI)
	disconnectsBefore := n.pluginDisconnects()
	w, err := cp.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	times := map[string]*podTimes{}
	last := map[string]*corev1.Pod{}
	running := 0
	var r deploymentRun
	timeout := time.NewTimer(size.running)
	defer timeout.Stop()

	b.StartTimer()
	start := time.Now()
	if _, err := cp.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for running < size.replicas {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch of %s's pods ended with %d of %d Running", name, running, size.replicas)
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
				if len(times) == size.replicas {
					r.allCreated = now
				}
			}
			last[p.Name] = p
			if p.Status.Phase == corev1.PodFailed {
				b.Fatalf("pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message)
			}
			if pt.bound == 0 && p.Spec.NodeName != "" {
				pt.bound = now
				if bound := countIf(times, func(t *podTimes) bool { return t.bound != 0 }); bound == size.replicas {
					r.allBound = now
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
			b.Fatalf("%d of %d pods of %s Running after %v", running, size.replicas, name, size.running)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	w.Stop()
	for _, pt := range times {
		r.starts = append(r.starts, pt.running-pt.seen)
	}
	r.check(b, n, ns, name, last, size, sliBefore)
	for _, l := range n.pluginDisconnects()[len(disconnectsBefore):] {
		b.Logf("%s: containerd: %s", n.name, l)
		r.disconnects++
	}
	b.Logf("%s: %d pods Running in %v (all created %v, all bound %v; %d sandbox creations retried, %d plugin disconnects); per pod, since the Deployment's creation: %s; start latency (created to Running) p50 %v p99 %v max %v; the kubelet's SLI (%d pods) p50 %v p99 %v max %v",
		n.name, size.replicas, elapsed.Round(time.Millisecond), r.allCreated.Round(time.Millisecond), r.allBound.Round(time.Millisecond),
		r.retries, r.disconnects, podTimesSummary(times),
		percentile(r.starts, 50).Round(time.Millisecond), percentile(r.starts, 99).Round(time.Millisecond), percentile(r.starts, 100).Round(time.Millisecond),
		len(r.slis), percentile(r.slis, 50).Round(time.Millisecond), percentile(r.slis, 99).Round(time.Millisecond), percentile(r.slis, 100).Round(time.Millisecond))

	fg := metav1.DeletePropagationForeground
	if err := cp.client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the pods of "+name+" and their sandboxes to be gone", size.gone, 250*time.Millisecond, func() (bool, string) {
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
	return r
}

// check fails the benchmark for a pod that failed or is not as it should
// be once all are Running: exactly size.replicas pods (none replaced),
// each with one IPv4 and one IPv6 address in the Node's pod CIDRs and no
// container restarted; no Warning event in the namespace but sandbox
// creations the kubelet retried, which it counts into r.retries. Then it
// reads the kubelet's SLI of each pod from its log into r.slis (waiting
// up to 10 s for the kubelet to log them all; fewer than 90 % fails), and
// checks that the SLI histogram grew by exactly those values since
// sliBefore.
func (r *deploymentRun) check(b *testing.B, n *kubeNode, ns, name string, pods map[string]*corev1.Pod, size deploymentBench, sliBefore histogram) {
	ctx := b.Context()
	if len(pods) != size.replicas {
		b.Errorf("%s: the watch saw %d pods of %s, want %d (a pod replaced?)", n.name, len(pods), name, size.replicas)
	}
	for _, p := range pods {
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
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != 0 {
				b.Errorf("pod %s: container %s restarted %d times", p.Name, c.Name, c.RestartCount)
			}
		}
	}
	events, err := n.cp.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		b.Fatal(err)
	}
	// A sandbox the kubelet failed to create, or could not create while
	// the runtime's network was not ready, it creates again: that pod
	// starts later, which its latency shows; the benchmark counts and
	// logs those. Any other warning fails it, once per reason (a
	// node-wide problem warns for every pod).
	warned := map[string][]corev1.Event{}
	for _, e := range events.Items {
		warned[e.Reason] = append(warned[e.Reason], e)
	}
	for reason, es := range warned {
		e := es[0]
		msg := fmt.Sprintf("%s: %d Warning events %s, the first on %s/%s: %s", n.name, len(es), reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		switch reason {
		case "FailedCreatePodSandBox":
			for _, e := range es {
				r.retries += int(max(e.Count, 1))
			}
			b.Log(msg)
		case "NetworkNotReady":
			b.Log(msg)
		default:
			b.Error(msg)
		}
	}

	// The kubelet logs a pod's SLI when its own watch sees the pod
	// Running, which can be after the test's; and not at all when that
	// watch event came before its status manager noted the pod running
	// (the tracker then has no running time for it, and no later event
	// comes for a pod that stays as it is).
	prefix := ns + "/" + name + "-"
	var logged map[string]time.Duration
	// A shortfall after 10 s is judged below.
	testutil.Poll(10*time.Second, 100*time.Millisecond, func() error {
		var err error
		if logged, err = kubeletPodStarts(n.kubelet.log.String(), prefix); err != nil {
			b.Fatal(err)
		}
		if len(logged) != size.replicas {
			return errors.New("waiting for the kubelet to log every pod's start")
		}
		return nil
	})
	if len(logged) < size.replicas {
		b.Logf("%s: the kubelet logged the startup duration of %d of the %d pods", n.name, len(logged), size.replicas)
	}
	if len(logged) < size.replicas*9/10 {
		b.Errorf("%s: the kubelet logged the startup duration of only %d of the %d pods", n.name, len(logged), size.replicas)
	}
	for pod, d := range logged {
		if _, ok := pods[strings.TrimPrefix(pod, ns+"/")]; !ok {
			b.Errorf("%s: the kubelet logged the startup of %s, which the watch did not see", n.name, pod)
		}
		r.slis = append(r.slis, d)
	}
	if ok, why := n.kubeletHistogram(metricPodStartSLI).sub(sliBefore).matches(r.slis); !ok {
		b.Errorf("%s: the kubelet's %s grew by other values than the %d it logged for the pods of %s: %s", n.name, metricPodStartSLI, len(r.slis), name, why)
	}
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

// podTimesSummary gives the median, the 99th percentile and the maximum
// over the pods of each state's time.
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
		if len(ds) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s median %v p99 %v max %v", s.name,
			percentile(ds, 50).Round(time.Millisecond), percentile(ds, 99).Round(time.Millisecond), percentile(ds, 100).Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}
