package kubee2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The simulated cluster of BenchmarkNetpolScale: scaleNodes Nodes (one
// real, node 0: a network namespace with nrinetd and nri-podnet; the
// others objects only), scalePods pods over scaleNamespaces namespaces,
// scalePolicies NetworkPolicies. It is the shape of
// plugins/podnet/netpol's BenchmarkCompile at cluster scale: pod k is in
// namespace ns<k%100> with label app=a<(k/100)%10>; namespace ns<n> has
// team=t<n%10>; policy i, in namespace ns<i%100>, isolates app a<i%10>
// for ingress from app a<(i+1)%10> of the namespaces of team t<i%10>,
// on TCP port 8000+i/100.
const (
	scaleNodes      = 1000
	scalePods       = 10000
	scaleNamespaces = 100
	scalePolicies   = 1000
	// scalePodsPerNode: the real node runs pods 0, 10, ..., 90 (in
	// namespaces ns0, ns10, ..., ns90, app a0: each isolated by the ten
	// policies of its namespace); the others are spread over Nodes 1 to
	// scaleNodes-2, about ten each. Node scaleNodes-1 is left for the
	// pods the pod-change benchmark adds.
	scalePodsPerNode = scalePods / scaleNodes
)

// Addresses of the simulated cluster, inside the test's ranges and apart
// from those of the stages (clusterCIDR6 is a /56 of d0xx; the underlay's
// /64s are c0xx).
var (
	// scaleCIDR4 and scaleCIDR6 are the cluster's pod CIDRs: Node i has
	// the i-th /27 and the i-th /64 (1,024 and 4,096 of them).
	scaleCIDR4 = netip.MustParsePrefix("198.19.0.0/17")
	scaleCIDR6 = netip.MustParsePrefix("fd00:198:18:e000::/52")
	// scaleNodeNet4 and scaleNodeNet6 hold the simulated Nodes'
	// InternalIPs: a dummy link in the real node's namespace has them on
	// link, so that its routes via those addresses can be set.
	scaleNodeNet4 = netip.MustParsePrefix("198.19.128.0/22")
	scaleNodeNet6 = netip.MustParsePrefix("fd00:198:18:f000::/64")
)

// scaleNodeCIDRs returns Node i's pod CIDRs.
func scaleNodeCIDRs(i int) []netip.Prefix {
	b4 := scaleCIDR4.Addr().As4()
	v := uint32(b4[0])<<24 | uint32(b4[1])<<16 | uint32(b4[2])<<8 | uint32(b4[3])
	v += uint32(i) * 32
	v4 := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 27)
	b6 := scaleCIDR6.Addr().As16()
	g := uint16(b6[6])<<8 | uint16(b6[7])
	g += uint16(i)
	b6[6], b6[7] = byte(g>>8), byte(g)
	return []netip.Prefix{v4, netip.PrefixFrom(netip.AddrFrom16(b6), 64)}
}

// scaleNodeAddrs returns simulated Node i's InternalIPs.
func scaleNodeAddrs(i int) []netip.Addr {
	a4, a6 := scaleNodeNet4.Addr(), scaleNodeNet6.Addr()
	for range i + 2 { // .1 is the dummy link's own
		a4, a6 = a4.Next(), a6.Next()
	}
	return []netip.Addr{a4, a6}
}

// nth returns the address n after p's first.
func nth(p netip.Prefix, n int) netip.Addr {
	a := p.Addr()
	for range n {
		a = a.Next()
	}
	return a
}

func scaleNodeName(cp *controlPlane, i int) string { return fmt.Sprintf("nrks-%s-%d", cp.token, i) }

// scaleCluster is the simulated cluster's state: the real node and a
// clientset allowed many requests a second.
type scaleCluster struct {
	t      testing.TB
	cp     *controlPlane
	node   *node
	client kubernetes.Interface
	tables *tableWatch
	routes *routeWatch
	nodes  int // Nodes registered, the real one included
}

// BenchmarkNetpolScale measures nri-podnet's Kubernetes state at cluster
// scale, with a real kube-apiserver and objects only (no kubelets): the
// time from a change in the API to the kernel (routes for Nodes; the
// NetworkPolicy table for policies and pods), the first full sync after a
// restart, and nri-podnet's memory. Each sub-benchmark reports p50 and
// p99 (ms) besides the mean (ns/op); make bench-netpol-scale runs it
// (docs/performance.md).
func BenchmarkNetpolScale(b *testing.B) {
	cp := startControlPlaneWith(b, controlPlaneOptions{noControllerManager: true})
	s := &scaleCluster{t: b, cp: cp}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.adminConfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	if s.client, err = kubernetes.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	s.createNamespaces()
	s.node = startNodeWith(b, cp, "a", nodeOptions{
		podCIDRs:     scaleNodeCIDRs(0),
		clusterCIDRs: []netip.Prefix{scaleCIDR4, scaleCIDR6},
		health:       true,
		podnetEnv:    daemonSetEnv(b),
	})
	s.nodes = 1
	s.addNodeLink()
	s.tables = watchTables(b, s.node.netnsPath)
	s.routes = watchRoutes(b, s.node.netnsPath)
	s.runLocalPods()

	for _, n := range []int{10, 100, scaleNodes} {
		s.growNodes(n)
		b.Run(fmt.Sprintf("route/nodes=%d", n), s.benchRoute)
	}
	start := time.Now()
	s.createPods()
	s.createPolicies()
	b.Logf("%d pods and %d policies created in %v", scalePods, scalePolicies, time.Since(start).Round(time.Millisecond))
	s.waitQuiet(5 * time.Second)
	b.Logf("nri-podnet: %s; %s", s.rss(), s.tableMetrics())
	b.Run("first-sync", s.benchFirstSync)
	b.Run("policy-change", s.benchPolicyChange)
	b.Run("pod-change", s.benchPodChange)
	b.Logf("nri-podnet at the end: %s; %s", s.rss(), s.tableMetrics())
}

func (s *scaleCluster) createNamespaces() {
	ctx := s.t.Context()
	for n := range scaleNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", n), Labels: map[string]string{"team": fmt.Sprintf("t%d", n%10)}}}
		if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			s.t.Fatal(err)
		}
		// No controller-manager makes it; the ServiceAccount admission
		// plugin needs it for every pod.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := s.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
}

// addNodeLink gives the real node's namespace a link holding the
// simulated Nodes' subnets, so that routes via their InternalIPs are on
// link (no traffic goes there): a veth pair with both ends in the
// namespace (this kernel has no dummy links).
func (s *scaleCluster) addNodeLink() {
	t, ns := s.t, s.node.netns
	run(t, "ip", "-n", ns, "link", "add", "nrksim0", "type", "veth", "peer", "name", "nrksim1")
	run(t, "ip", "-n", ns, "link", "set", "nrksim1", "up")
	run(t, "ip", "-n", ns, "addr", "add", nth(scaleNodeNet4, 1).String()+"/"+strconv.Itoa(scaleNodeNet4.Bits()), "dev", "nrksim0")
	run(t, "ip", "-n", ns, "addr", "add", nth(scaleNodeNet6, 1).String()+"/"+strconv.Itoa(scaleNodeNet6.Bits()), "dev", "nrksim0", "nodad")
	run(t, "ip", "-n", ns, "link", "set", "nrksim0", "up")
}

// scalePod describes pod k of the cluster.
func scalePod(k int) (ns, name string, labels map[string]string) {
	return fmt.Sprintf("ns%d", k%scaleNamespaces), fmt.Sprintf("p%d", k), map[string]string{"app": fmt.Sprintf("a%d", (k/scaleNamespaces)%10)}
}

// runLocalPods runs the real node's pods (through nrinetd's CRI, with
// nri-podnet's addresses) and creates their Pod objects with those
// addresses, as a kubelet would.
func (s *scaleCluster) runLocalPods() {
	for k := 0; k < scalePodsPerNode*10; k += 10 {
		ns, name, labels := scalePod(k)
		p := s.node.runPodIn(ns, name, labels)
		if err := s.createPod(ns, name, labels, s.node.name, p.ips); err != nil {
			s.t.Fatal(err)
		}
	}
}

// createPod creates a Pod object on node with ips as its status, as the
// kubelet reports a running pod.
func (s *scaleCluster) createPod(ns, name string, labels map[string]string, node string, ips []netip.Addr) error {
	ctx := s.t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "c", Image: pauseRef}},
		},
	}
	created, err := s.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
	}
	return s.setPodIPs(created, ips)
}

func (s *scaleCluster) setPodIPs(pod *corev1.Pod, ips []netip.Addr) error {
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ips[0].String()
	for _, a := range ips {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: a.String()})
	}
	if _, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(s.t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting pod %s/%s's addresses: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// parallel runs f(i) for i in [0, n), 16 at a time, and fails the test
// with the first error.
func (s *scaleCluster) parallel(n int, f func(i int) error) {
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		s.t.Fatal(err)
	}
}

// growNodes registers simulated Nodes until there are n.
func (s *scaleCluster) growNodes(n int) {
	from := s.nodes
	s.parallel(n-from, func(j int) error { return s.registerSimNode(from + j) })
	s.nodes = n
	// Every route is in before the benchmark starts.
	s.routes.wait(s.t, s.routes.expect(scaleNodeCIDRs(n - 1)[0], true), time.Minute)
}

// registerSimNode creates simulated Node i, whose pod CIDRs and
// InternalIPs are scaleNodeCIDRs(i) and scaleNodeAddrs(i).
func (s *scaleCluster) registerSimNode(i int) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: scaleNodeName(s.cp, i), Labels: map[string]string{"nrinet.io/e2e": s.cp.token}}}
	for _, c := range scaleNodeCIDRs(i) {
		n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, c.String())
	}
	n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	for _, a := range scaleNodeAddrs(i) {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
	}
	if _, err := s.client.CoreV1().Nodes().Create(s.t.Context(), n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Node %s: %w", n.Name, err)
	}
	return nil
}

// benchRoute: a Node added, until the route to its pods is in the real
// node's kernel (and, untimed, deleted until the route is gone).
func (s *scaleCluster) benchRoute(b *testing.B) {
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		idx := scaleNodes + i%20 // spare /27s of scaleCIDR4 (1,024 in all)
		dst := scaleNodeCIDRs(idx)[0]
		added := s.routes.expect(dst, true)
		t0 := time.Now()
		if err := s.registerSimNode(idx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, s.routes.wait(b, added, time.Minute).Sub(t0))
		gone := s.routes.expect(dst, false)
		if err := s.client.CoreV1().Nodes().Delete(context.WithoutCancel(b.Context()), scaleNodeName(s.cp, idx), metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		s.routes.wait(b, gone, time.Minute)
	}
	reportLatencies(b, lat)
}

// createPods creates the other nodes' pods, with addresses of their
// Nodes' pod CIDRs.
func (s *scaleCluster) createPods() {
	var others []int
	for k := range scalePods {
		if k < scalePodsPerNode*10 && k%10 == 0 {
			continue // the real node's
		}
		others = append(others, k)
	}
	s.parallel(len(others), func(j int) error {
		k := others[j]
		node := 1 + j%(scaleNodes-2)
		slot := 2 + j/(scaleNodes-2)
		ns, name, labels := scalePod(k)
		cidrs := scaleNodeCIDRs(node)
		return s.createPod(ns, name, labels, scaleNodeName(s.cp, node), []netip.Addr{nth(cidrs[0], slot), nth(cidrs[1], slot)})
	})
}

func scalePolicy(i int) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%scaleNamespaces), Name: fmt.Sprintf("pol%d", i)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", i%10)}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", (i+1)%10)}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(int32(8000 + i/scaleNamespaces)))}},
			}},
		},
	}
}

func (s *scaleCluster) createPolicies() {
	s.parallel(scalePolicies, func(i int) error {
		p := scalePolicy(i)
		if _, err := s.client.NetworkingV1().NetworkPolicies(p.Namespace).Create(s.t.Context(), p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating NetworkPolicy %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
}

// waitQuiet waits until nri-podnet wrote no table for quiet.
func (s *scaleCluster) waitQuiet(quiet time.Duration) {
	waitFor(s.t, fmt.Sprintf("nri-podnet's tables unchanged for %v", quiet), 5*time.Minute, quiet/5, func() (bool, string) {
		last := s.tables.last()
		return !last.IsZero() && time.Since(last) >= quiet, "last transaction at " + last.Format(time.RFC3339Nano)
	})
}

// benchFirstSync: nri-podnet restarted, until /readyz answers 200 (the
// runtime connected, the Node read, the policies' first full sync
// written).
func (s *scaleCluster) benchFirstSync(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		if err := s.node.podnet.stop(); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		s.node.startPodnet()
		waitFor(b, "nri-podnet's /readyz", 2*time.Minute, 20*time.Millisecond, func() (bool, string) {
			if !s.node.podnet.running() {
				b.Fatalf("nri-podnet exited: %v\n%s", s.node.podnet.cmd.ProcessState, s.node.podnet.log.tail(40))
			}
			code, body := s.get("/readyz")
			return code == http.StatusOK, body
		})
		lat = append(lat, time.Since(t0))
		b.Logf("after the restart: %s", s.rss())
	}
	reportLatencies(b, lat)
}

// benchPolicyChange: pol0 (which isolates the real node's pod p0) gets a
// new port, until the rule with it is in the kernel.
func (s *scaleCluster) benchPolicyChange(b *testing.B) {
	var lat, api []time.Duration
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		port := 20000 + i%10000
		p, err := s.client.NetworkingV1().NetworkPolicies("ns0").Get(ctx, "pol0", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p.Spec.Ingress[0].Ports[0].Port = ptr.To(intstr.FromInt32(int32(port)))
		want := "tcp/" + strconv.Itoa(port)
		x := s.tables.expect(env.podnet, func(g tableGen) bool {
			return slices.ContainsFunc(g.comments, func(c string) bool { return strings.HasSuffix(c, want) })
		})
		t0 := time.Now()
		if _, err := s.client.NetworkingV1().NetworkPolicies("ns0").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		api = append(api, time.Since(t0))
		lat = append(lat, s.tables.wait(b, x, "a rule for "+want, time.Minute).Sub(t0))
	}
	b.Logf("the update call alone (ms), in order: %s", formatMs(api))
	reportLatencies(b, lat)
}

// benchPodChange: a pod of namespace ns10, app a1 (a peer of the
// policies isolating the real node's pods) gets its addresses, until the
// real node's sets hold them; it is then deleted (untimed) until a table
// written after the deletion.
func (s *scaleCluster) benchPodChange(b *testing.B) {
	var lat, api []time.Duration
	ctx := b.Context()
	node := scaleNodes - 1 // no other pods
	cidrs := scaleNodeCIDRs(node)
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("extra%d", i)
		slot := 2 + 2*(i%14) // apart from each other: an interval of its own
		ips := []netip.Addr{nth(cidrs[0], slot), nth(cidrs[1], slot)}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns10", Name: name, Labels: map[string]string{"app": "a1"}},
			Spec: corev1.PodSpec{NodeName: scaleNodeName(s.cp, node), AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "c", Image: pauseRef}}},
		}
		created, err := s.client.CoreV1().Pods("ns10").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		key := ips[0].AsSlice()
		x := s.tables.expect(env.podnet, func(g tableGen) bool {
			return slices.ContainsFunc(g.added, func(k []byte) bool { return slices.Equal(k, key) })
		})
		t0 := time.Now()
		if err := s.setPodIPs(created, ips); err != nil {
			b.Fatal(err)
		}
		api = append(api, time.Since(t0))
		lat = append(lat, s.tables.wait(b, x, "an element "+ips[0].String(), time.Minute).Sub(t0))
		x = s.tables.expect(env.podnet, func(tableGen) bool { return true })
		if err := s.client.CoreV1().Pods("ns10").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			b.Fatal(err)
		}
		s.tables.wait(b, x, "any change after the pod's deletion", time.Minute)
	}
	b.Logf("the status update call alone (ms), in order: %s", formatMs(api))
	reportLatencies(b, lat)
}

// reportLatencies reports lat's p50 and p99 in milliseconds.
func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	b.Logf("%d samples (ms), in order: %s", len(lat), formatMs(lat))
	lat = slices.Sorted(slices.Values(lat))
	q := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.5) - 1
		return float64(lat[max(0, min(i, len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.Logf("%d samples (ms), sorted: %s", len(lat), formatMs(lat))
}

func formatMs(lat []time.Duration) string {
	ms := make([]string, len(lat))
	for i, d := range lat {
		ms[i] = strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	return strings.Join(ms, " ")
}

// daemonSetEnv is the environment deploy/base's DaemonSet gives
// nri-podnet that has literal values (GOMEMLIMIT), "NAME=value", so that
// the benchmark's nri-podnet runs as the deployed one does.
func daemonSetEnv(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatalf("deploy/base/daemonset.yaml: %v", err)
	}
	var out []string
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				out = append(out, e.Name+"="+e.Value)
			}
		}
	}
	t.Logf("nri-podnet's environment from deploy/base/daemonset.yaml: %v", out)
	return out
}

// get fetches path from nri-podnet's health address.
func (s *scaleCluster) get(path string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + s.node.healthAddr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// rss is nri-podnet's resident memory now and at its peak.
func (s *scaleCluster) rss() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.node.podnet.pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}

// tableMetrics are nri-podnet's NetworkPolicy gauges.
func (s *scaleCluster) tableMetrics() string {
	code, body := s.get("/metrics")
	if code != http.StatusOK {
		return fmt.Sprintf("/metrics: %d %s", code, body)
	}
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "nrinet_podnet_netpol_") && !strings.Contains(l, "_bucket") ||
			slices.ContainsFunc([]string{"go_memstats_heap_inuse_bytes ", "go_memstats_heap_alloc_bytes ", "go_memstats_next_gc_bytes ", "go_memstats_sys_bytes "}, func(p string) bool { return strings.HasPrefix(l, p) }) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
