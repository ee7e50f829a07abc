package kubee2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Stage 3's Deployment.
const (
	deployReplicas = 3
	// podsRunningTimeout bounds how long the Deployment's pods take to be
	// Running, podsGoneTimeout to be gone once it is deleted.
	podsRunningTimeout = 90 * time.Second
	podsGoneTimeout    = 60 * time.Second
)

// testRealNode is stage 3 as far as it goes today: kube-scheduler joins
// the control plane; a real node runs the kubelet v1.34 with containerd on
// nrinet in network mode nri and nri-podnet (started by the test: the
// DaemonSet is an extension point, see kubeNode.startPodnet); its Node
// turns Ready; a Deployment of busybox pods runs on it and every pod's
// addresses agree between the API (status.podIPs, kubectl get pods -o
// wide), CRI (crictl inspectp) and the pod's eth0, inside the node's pod
// CIDRs; the pods ping each other in both families; deleting the
// Deployment removes them.
func testRealNode(t *testing.T, cp *controlPlane) {
	cp.startScheduler()
	n := startKubeNode(t, cp, "c")
	ctx := t.Context()
	ns := "nrke-" + cp.token
	if _, err := cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount admission refuses pods until the namespace's
	// default service account exists.
	waitFor(t, "service account "+ns+"/default", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, err := cp.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	start := time.Now()
	labels := map[string]string{"app": "busybox"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](deployReplicas),
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
	if _, err := cp.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	waitFor(t, fmt.Sprintf("%d Running pods of Deployment %s/busybox", deployReplicas, ns), podsRunningTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := cp.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=busybox"})
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
		return len(pods) == deployReplicas, strings.Join(states, "; ")
	})
	t.Logf("%d pods Running %v after the Deployment was created", deployReplicas, time.Since(start).Round(time.Millisecond))

	wide := kubectlWide(t, cp, ns)
	var running []*kubePod
	for _, p := range pods {
		running = append(running, n.checkPod(p, wide))
	}
	for _, from := range running {
		for _, to := range running {
			if from == to {
				continue
			}
			for _, a := range to.ips {
				t.Run(fmt.Sprintf("ping/%s-%s-%s", from.name, familyOf(a), to.name), func(t *testing.T) {
					out, errOut, err := n.crictl("exec", "--sync", "--timeout", "10", from.ctrID, "ping", "-c", "1", "-W", "2", a.String())
					if err != nil || !strings.Contains(out, "bytes from "+a.String()) {
						t.Errorf("ping %s from pod %s: %v\n%s%s", a, from.name, err, out, errOut)
					}
				})
			}
		}
	}

	start = time.Now()
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
	out := n.must("inspectp", "-o", "json", kp.sandboxID)
	if err := jsonUnmarshal(out, &insp); err != nil {
		t.Fatalf("crictl inspectp of pod %s: %v", p.Name, err)
	}
	cri := []string{insp.Status.Network.IP}
	for _, a := range insp.Status.Network.AdditionalIPs {
		cri = append(cri, a.IP)
	}
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
