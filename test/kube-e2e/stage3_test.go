package kubee2e

import (
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nrinet/nrinet/internal/testutil"
)

// Stage 3's Deployment.
const (
	deployReplicas = 3
	// podsRunningTimeout bounds how long the Deployment's pods take to be
	// Running, podsGoneTimeout to be gone once it is deleted.
	podsRunningTimeout = 90 * time.Second
	podsGoneTimeout    = 60 * time.Second
)

// testRealNode is stages 3 and 4: kube-scheduler joins the control
// plane; a real node runs the kubelet v1.37 with containerd on nrinet in
// network mode nri, and nri-podnet as the DaemonSet of deploy/ with the
// image of this checkout; its Node turns Ready; a Deployment of busybox
// pods runs on it and every pod's addresses agree between the API
// (status.podIPs, kubectl get pods -o wide), CRI (crictl inspectp) and the
// pod's eth0, inside the node's pod CIDRs; the pods ping each other in
// both families; restarts of the kubelet, containerd and the DaemonSet's
// pod keep every address, and so does an upgrade of nri-podnet to a new
// image (kubectl set image), after which the pods still ping each other;
// NetworkPolicies are enforced (a deny stops the pings, an allow brings
// them back);
// with the plugin away a new pod waits; deleting
// the Deployment removes the pods; then the documented uninstall
// (uninstallPodnet) leaves nothing of nri-podnet on the node.
func testRealNode(t *testing.T, cp *controlPlane) {
	cp.startScheduler()
	n := startKubeNode(t, cp, "c")
	// A second Node without a kubelet (nor the label kubernetes.io/os,
	// so no DaemonSet pod either): nri-podnet routes to its pod CIDRs,
	// which the uninstall must remove.
	peer := n.addPeerNode()
	ctx := t.Context()
	ns := "nrke-" + cp.token
	createNamespace(t, cp, ns)

	start := time.Now()
	createBusybox(t, cp, ns, deployReplicas)
	pods := runningPods(t, cp, ns, deployReplicas)
	t.Logf("%d pods Running %v after the Deployment was created", deployReplicas, time.Since(start).Round(time.Millisecond))
	before := n.checkPods(pods, kubectlWide(t, cp, ns))
	for _, from := range before {
		n.pingAll(t, "ping", from, before)
	}

	// Restarts, and an upgrade of nri-podnet's image: every pod keeps its
	// sandbox and its addresses (and, after the upgrade, its traffic).
	for _, r := range []struct {
		what    string
		restart func(since time.Time)
		ping    bool
	}{
		{"kubelet", func(since time.Time) {
			n.restart(n.kubelet, n.runKubelet)
			n.waitKubeletUp(since)
			n.waitReady()
		}, false},
		{"containerd", func(time.Time) {
			n.restart(n.containerd, n.runContainerd)
			n.waitPodnetPod("")
		}, false},
		// kubectl delete pod: the DaemonSet makes a new one.
		{"nri-podnet's pod", func(time.Time) { n.restartPodnet() }, false},
		// kubectl set image: the DaemonSet rolls a new version out.
		{"nri-podnet (upgraded to a new image)", func(time.Time) { n.upgradePodnet(env.podnetUpgradeTag) }, true},
	} {
		start := time.Now()
		r.restart(start)
		after := n.checkPods(runningPods(t, cp, ns, deployReplicas), kubectlWide(t, cp, ns))
		checkSamePods(t, "after "+r.what+" restarted", before, after)
		t.Logf("%s restarted: Node Ready again and every pod's sandbox and addresses kept, in %v", r.what, time.Since(start).Round(time.Millisecond))
		if r.ping {
			for _, from := range after {
				n.pingAll(t, "ping-after", from, after)
			}
		}
	}

	// NetworkPolicy, enforced by nri-podnet's DaemonSet pod: a policy
	// isolating the pods for ingress stops their pings (both families);
	// one that lets the Deployment's pods in brings them back; with both
	// deleted the pods are open again.
	n.checkNetworkPolicies(t, ns, before)

	// The plugin down (the DaemonSet's nodeSelector matches no Node, so
	// it deletes its pod): existing pods keep their addresses, a new pod
	// waits, and starts once the plugin is back.
	start = time.Now()
	n.podnetAway(true)
	waitFor(t, "containerd's NetworkReady false and Node "+n.name+" NotReady with nri-podnet down", kubeNodeReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		_, network, msg := n.criConditions()
		ready, why := n.nodeReady()
		return !network && !ready, fmt.Sprintf("NetworkReady %v (%s), Node Ready %v (%s)", network, msg, ready, why)
	})
	_, _, msg := n.criConditions()
	_, why := n.nodeReady()
	t.Logf("nri-podnet down: containerd: NetworkReady false, %s; Node NotReady: %s (%v)", msg, why, time.Since(start).Round(time.Millisecond))
	down := n.checkPods(runningPods(t, cp, ns, deployReplicas), kubectlWide(t, cp, ns))
	checkSamePods(t, "with nri-podnet down", before, down)
	scale, err := cp.client.AppsV1().Deployments(ns).GetScale(ctx, "busybox", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = deployReplicas + 1
	if _, err := cp.client.AppsV1().Deployments(ns).UpdateScale(ctx, "busybox", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	newPod := n.waitNewPodWaits(ns, before)
	start = time.Now()
	n.podnetAway(false)
	n.waitPodnetPod("")
	pods = runningPods(t, cp, ns, deployReplicas+1)
	t.Logf("nri-podnet back: Node Ready and %d pods Running in %v", deployReplicas+1, time.Since(start).Round(time.Millisecond))
	all := n.checkPods(pods, kubectlWide(t, cp, ns))
	added := all[newPod]
	delete(all, newPod)
	checkSamePods(t, "after nri-podnet came back", before, all)
	if added == nil {
		t.Fatalf("the pod %s created while nri-podnet was down is not among the Running pods", newPod)
	}
	n.pingAll(t, "ping-new", added, before)

	deleteBusybox(t, cp, ns)

	n.uninstallPodnet(peer, "kubectl delete -k "+n.overlay, func() string { return n.cp.kubectl("delete", "-k", n.overlay) })
}

// createNamespace creates namespace ns and waits until its default
// service account exists: the ServiceAccount admission refuses pods until
// then.
func createNamespace(t testing.TB, cp *controlPlane, ns string) {
	t.Helper()
	ctx := t.Context()
	if _, err := cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "service account "+ns+"/default", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, err := cp.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// createBusybox creates Deployment busybox in ns: replicas busybox pods
// (label app=busybox) sleeping, with the node's imported image, no
// service account token, and a grace period of 1 s.
func createBusybox(t testing.TB, cp *controlPlane, ns string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": "busybox"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
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
	if _, err := cp.client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteBusybox deletes Deployment busybox in ns (foreground) and waits
// until ns has no pod.
func deleteBusybox(t testing.TB, cp *controlPlane, ns string) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	fg := metav1.DeletePropagationForeground
	if err := cp.client.AppsV1().Deployments(ns).Delete(ctx, "busybox", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment's pods to be gone", podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := cp.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items))
	})
	t.Logf("pods gone %v after the Deployment was deleted", time.Since(start).Round(time.Millisecond))
}

// runningPods waits until Deployment busybox in ns has want Running pods
// and returns them.
func runningPods(t testing.TB, cp *controlPlane, ns string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, fmt.Sprintf("%d Running pods of Deployment %s/busybox", want, ns), podsRunningTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := cp.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=busybox"})
		if err != nil {
			return false, err.Error()
		}
		pods = pods[:0]
		var states []string
		for _, p := range list.Items {
			states = append(states, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, p.Status.PodIPs))
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		return len(pods) == want && len(list.Items) == want, strings.Join(states, "; ")
	})
	return pods
}

// checkPods checks every pod (checkPod) and returns them by name.
func (n *kubeNode) checkPods(pods []corev1.Pod, wide map[string][2]string) map[string]*kubePod {
	out := map[string]*kubePod{}
	for _, p := range pods {
		out[p.Name] = n.checkPod(p, wide)
	}
	return out
}

// checkSamePods checks that the same pods run, each in the same sandbox
// with the same addresses.
func checkSamePods(t testing.TB, when string, before, after map[string]*kubePod) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s: pod %s is gone; pods now: %v", when, name, slices.Sorted(maps.Keys(after)))
		case a.sandboxID != b.sandboxID:
			t.Errorf("%s: pod %s has a new sandbox %s (was %s)", when, name, a.sandboxID, b.sandboxID)
		case !slices.Equal(a.ips, b.ips):
			t.Errorf("%s: pod %s has addresses %v (was %v)", when, name, a.ips, b.ips)
		}
	}
	for name := range after {
		if before[name] == nil {
			t.Errorf("%s: a new pod %s runs", when, name)
		}
	}
}

// pingAll pings, from pod from, every other pod of to on each address,
// each ping a subtest named prefix/<from>-<family>-<to>.
func (n *kubeNode) pingAll(t *testing.T, prefix string, from *kubePod, to map[string]*kubePod) {
	for _, name := range slices.Sorted(maps.Keys(to)) {
		dst := to[name]
		if dst.name == from.name {
			continue
		}
		for _, a := range dst.ips {
			t.Run(fmt.Sprintf("%s/%s-%s-%s", prefix, from.name, familyOf(a), dst.name), func(t *testing.T) {
				out, errOut, err := n.crictl("exec", "--sync", "--timeout", "10", from.ctrID, "ping", "-c", "1", "-W", "2", a.String())
				if err != nil || !strings.Contains(out, "bytes from "+a.String()) {
					t.Errorf("ping %s from pod %s: %v\n%s%s", a, from.name, err, out, errOut)
				}
			})
		}
	}
}

// nodeReady returns the Node's Ready condition.
func (n *kubeNode) nodeReady() (bool, string) {
	node, err := n.cp.client.CoreV1().Nodes().Get(n.t.Context(), n.name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition"
}

// waitNewPodWaits waits for the pod the Deployment adds (one not in
// before) and until it is seen waiting for the network: not Running, and
// either not scheduled (the not-ready Node is tainted) or refused by the
// kubelet for the network (an event NetworkNotReady). It returns its name.
func (n *kubeNode) waitNewPodWaits(ns string, before map[string]*kubePod) string {
	t := n.t
	t.Helper()
	var name string
	waitFor(t, "a new pod of the Deployment waiting for the network", podsRunningTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := n.cp.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=busybox"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range list.Items {
			if before[p.Name] != nil {
				continue
			}
			name = p.Name
			if p.Status.Phase == corev1.PodRunning {
				t.Fatalf("pod %s runs while nri-podnet is down (addresses %v)", p.Name, p.Status.PodIPs)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					t.Logf("new pod %s waits: %s %s: %s", p.Name, c.Type, c.Reason, c.Message)
					return true, ""
				}
			}
			events, err := n.cp.client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range events.Items {
				if e.Reason == "NetworkNotReady" {
					t.Logf("new pod %s waits: event %s: %s", p.Name, e.Reason, e.Message)
					return true, ""
				}
			}
			return false, fmt.Sprintf("pod %s: %s, conditions %v", p.Name, p.Status.Phase, p.Status.Conditions)
		}
		return false, "no new pod yet"
	})
	return name
}

// A kubePod is a Running pod of stage 3 as CRI knows it.
type kubePod struct {
	name, sandboxID, ctrID string
	ips                    []netip.Addr
}

// checkPod checks a Running pod's addresses: status.podIPs has one of
// each family, inside the node's pod CIDRs; kubectl get pods -o wide shows
// the first; crictl inspectp of the pod's sandbox reports the same, and so
// does eth0 in its container.
func (n *kubeNode) checkPod(p corev1.Pod, wide map[string][2]string) *kubePod {
	t := n.t
	t.Helper()
	kp := &kubePod{name: p.Name}
	for _, ip := range p.Status.PodIPs {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			t.Fatalf("pod %s: status.podIPs %v: %v", p.Name, p.Status.PodIPs, err)
		}
		kp.ips = append(kp.ips, a)
	}
	if len(kp.ips) != 2 || !kp.ips[0].Is4() || !kp.ips[1].Is6() || !n.podCIDRs[0].Contains(kp.ips[0]) || !n.podCIDRs[1].Contains(kp.ips[1]) {
		t.Errorf("pod %s: status.podIPs %v, want an IPv4 address of %s and an IPv6 one of %s", p.Name, kp.ips, n.podCIDRs[0], n.podCIDRs[1])
	}
	if got := wide[p.Name]; got != [2]string{p.Status.PodIP, n.name} {
		t.Errorf("pod %s: kubectl get pods -o wide shows IP %q on node %q, want %q on %q", p.Name, got[0], got[1], p.Status.PodIP, n.name)
	}
	uid := "io.kubernetes.pod.uid=" + string(p.UID)
	kp.sandboxID = strings.TrimSpace(n.must("pods", "-q", "--label", uid, "--state", "ready"))
	kp.ctrID = strings.TrimSpace(n.must("ps", "-q", "--label", uid, "--state", "running"))
	if strings.Contains(kp.sandboxID, "\n") || kp.sandboxID == "" || strings.Contains(kp.ctrID, "\n") || kp.ctrID == "" {
		t.Fatalf("pod %s: want one ready sandbox and one running container; CRI lists sandboxes %q, containers %q", p.Name, kp.sandboxID, kp.ctrID)
	}
	insp, err := testutil.ParsePodStatus([]byte(n.must("inspectp", "-o", "json", kp.sandboxID)))
	if err != nil {
		t.Fatalf("pod %s: %v", p.Name, err)
	}
	cri := insp.IPs()
	var want []string
	for _, a := range kp.ips {
		want = append(want, a.String())
	}
	if !slices.Equal(cri, want) {
		t.Errorf("pod %s: crictl inspectp reports %v, the API %v", p.Name, cri, want)
	}
	var eth0 []string
	for _, l := range strings.Split(n.must("exec", "--sync", "--timeout", "10", kp.ctrID, "ip", "-o", "addr", "show", "dev", "eth0", "scope", "global"), "\n") {
		f := strings.Fields(l)
		for i := range f {
			if (f[i] == "inet" || f[i] == "inet6") && i+1 < len(f) {
				a, _, _ := strings.Cut(f[i+1], "/")
				eth0 = append(eth0, a)
			}
		}
	}
	if !slices.Equal(eth0, want) {
		t.Errorf("pod %s: eth0 has %v, the API says %v", p.Name, eth0, want)
	}
	t.Logf("pod %s: %v (API, kubectl, CRI, eth0 agree)", p.Name, want)
	return kp
}

// kubectlWide runs kubectl get pods -o wide in namespace ns and returns
// each pod's IP and NODE columns.
func kubectlWide(t testing.TB, cp *controlPlane, ns string) map[string][2]string {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.kubeBin, "kubectl"), "--kubeconfig", cp.adminConfig,
		"get", "pods", "-n", ns, "-o", "wide").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get pods -o wide: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	header := strings.Fields(lines[0])
	ipCol, nodeCol := slices.Index(header, "IP"), slices.Index(header, "NODE")
	if ipCol < 0 || nodeCol < 0 {
		t.Fatalf("kubectl get pods -o wide: no IP or NODE column:\n%s", out)
	}
	got := map[string][2]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) > nodeCol {
			got[f[0]] = [2]string{f[ipCol], f[nodeCol]}
		}
	}
	t.Logf("kubectl get pods -o wide:\n%s", out)
	return got
}

// startScheduler starts kube-scheduler without leader election and
// without a serving port.
func (cp *controlPlane) startScheduler() {
	kubeconfig := cp.kubeconfig("scheduler", "system:kube-scheduler")
	cp.scheduler = startProc(cp.t, "kube-scheduler", "", nil, filepath.Join(env.kubeBin, "kube-scheduler"),
		"--kubeconfig", kubeconfig, "--secure-port", "0", "--leader-elect=false")
}

// policyTimeout bounds how long a NetworkPolicy change takes to reach the
// node's table (an informer event, then one nftables transaction).
const policyTimeout = 30 * time.Second

// checkNetworkPolicies creates, in ns, a policy that isolates every pod
// for ingress and waits until no pod reaches another by ping; then one
// that allows the Deployment's pods (app=busybox) in, and waits until
// they all reach each other; then deletes both and checks the pods reach
// each other.
func (n *kubeNode) checkNetworkPolicies(t *testing.T, ns string, pods map[string]*kubePod) {
	t.Helper()
	ctx := t.Context()
	defer func() {
		if t.Failed() {
			t.Logf("nri-podnet's log:\n%s", n.podnetLog(60))
		}
	}()
	start := time.Now()
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-ingress", Namespace: ns},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
	if _, err := n.cp.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(pods))
	from, to := pods[names[0]], pods[names[1]]
	waitFor(t, "the deny-ingress NetworkPolicy enforced", policyTimeout, 100*time.Millisecond, func() (bool, string) {
		for _, a := range to.ips {
			if n.pings(from, a) {
				return false, fmt.Sprintf("%s still reaches %s", from.name, a)
			}
		}
		return true, ""
	})
	t.Logf("NetworkPolicy deny-ingress enforced within %v of its creation", time.Since(start).Round(time.Millisecond))
	// Every pod isolated: the others do not reach the first either.
	for _, src := range pods {
		for _, a := range from.ips {
			if src != from && n.pings(src, a) {
				t.Errorf("with deny-ingress, pod %s reaches %s (%s)", src.name, from.name, a)
			}
		}
	}
	start = time.Now()
	allow := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-busybox", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "busybox"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "busybox"}}}}}},
		},
	}
	if _, err := n.cp.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, allow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the allow-busybox NetworkPolicy enforced", policyTimeout, 250*time.Millisecond, func() (bool, string) {
		for _, a := range to.ips {
			if !n.pings(from, a) {
				return false, fmt.Sprintf("%s does not reach %s yet", from.name, a)
			}
		}
		return true, ""
	})
	t.Logf("NetworkPolicy allow-busybox enforced %v after it was created", time.Since(start).Round(time.Millisecond))
	for _, src := range pods {
		n.pingAll(t, "ping-allowed", src, pods)
	}
	for _, name := range []string{deny.Name, allow.Name} {
		if err := n.cp.client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the pods open again with the policies deleted", policyTimeout, 250*time.Millisecond, func() (bool, string) {
		return n.pings(from, to.ips[0]), ""
	})
}

// pings reports whether pod from gets an answer from a to one ping.
func (n *kubeNode) pings(from *kubePod, a netip.Addr) bool {
	out, _, err := n.crictl("exec", "--sync", "--timeout", "5", from.ctrID, "ping", "-c", "1", "-W", "1", a.String())
	return err == nil && strings.Contains(out, "bytes from "+a.String())
}

// podnetLog is the tail of the log of the DaemonSet's nri-podnet
// container on the node (crictl logs).
func (n *kubeNode) podnetLog(lines int) string {
	ids, _, err := n.crictl("ps", "-q", "--name", "nri-podnet")
	if err != nil || strings.TrimSpace(ids) == "" {
		return fmt.Sprintf("(no nri-podnet container: %v)", err)
	}
	id := strings.Fields(ids)[0]
	out, errOut, err := n.crictl("logs", "--tail", strconv.Itoa(lines), id)
	if err != nil {
		return fmt.Sprintf("(crictl logs %s: %v)", id, err)
	}
	return out + errOut
}
