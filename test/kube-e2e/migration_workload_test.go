package kubee2e

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// deployWorkload creates the stage's namespace and workload and waits
// until it runs: the backend Deployment (two busybox web servers, spread
// one per node: topologySpreadConstraints with DoNotSchedule, so that a
// drained node's replacement waits for the node instead of joining the
// other; a preStop pause that lets kube-proxy drop the endpoint first),
// a PodDisruptionBudget (one backend always available), the dual-stack
// ClusterIP Service, and the client (one pod, preferably on node b).
func (m *migration) deployWorkload() {
	t := m.t
	ctx := t.Context()
	start := time.Now()
	if _, err := m.cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "service account "+m.ns+"/default", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, err := m.cp.client.CoreV1().ServiceAccounts(m.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	backend := map[string]string{"app": "backend"}
	pod := func(labels map[string]string, c corev1.Container, grace int64) corev1.PodTemplateSpec {
		c.Image, c.ImagePullPolicy = busyboxRef, corev1.PullNever
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{c},
				TerminationGracePeriodSeconds: ptr.To(grace),
				AutomountServiceAccountToken:  ptr.To(false),
				EnableServiceLinks:            ptr.To(false),
			},
		}
	}
	bt := pod(backend, corev1.Container{
		Name: "httpd", Command: []string{"sh", "-c", backendCommand},
		Ports: []corev1.ContainerPort{{ContainerPort: backendPort}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(backendPort)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "2"}}}},
	}, 10)
	bt.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: backend},
	}}
	client := map[string]string{"app": "client"}
	ct := pod(client, corev1.Container{Name: "client", Command: []string{"sleep", "100000"}}, 1)
	ct.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{m.c.nodes[1].name}}},
		}}},
	}}
	for _, d := range []*appsv1.Deployment{
		{ObjectMeta: metav1.ObjectMeta{Name: "backend"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: backend}, Template: bt}},
		{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: client}, Template: ct}},
	} {
		if _, err := m.cp.client.AppsV1().Deployments(m.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "backend"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: backend}},
	}
	if _, err := m.cp.client.PolicyV1().PodDisruptionBudgets(m.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "backend"},
		Spec: corev1.ServiceSpec{
			Selector:       backend,
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack),
			IPFamilies:     []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			Ports:          []corev1.ServicePort{{Port: servicePort, TargetPort: intstr.FromInt32(backendPort)}},
		},
	}
	created, err := m.cp.client.CoreV1().Services(m.ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range created.Spec.ClusterIPs {
		m.serviceIPs = append(m.serviceIPs, netip.MustParseAddr(ip))
	}
	if len(m.serviceIPs) != 2 || !m.serviceIPs[0].Is4() || !m.serviceIPs[1].Is6() {
		t.Fatalf("Service backend: cluster IPs %v, want one IPv4 and one IPv6", m.serviceIPs)
	}
	for _, n := range m.c.nodes {
		m.waitBackend(n)
	}
	waitFor(t, "the client pod Ready", podsRunningTimeout, 250*time.Millisecond, func() (bool, string) {
		p, ok := m.readyPod("client", "")
		return ok, fmt.Sprintf("%v", p.Status.Conditions)
	})
	m.checkPods("workload Ready")
	// The Service answers the client from both backends, both families,
	// before the probe begins.
	m.crossChecks("before the migration")
	t.Logf("workload Ready in %v: Service %v", time.Since(start).Round(time.Millisecond), m.serviceIPs)
}

// readyPod returns a Running, Ready pod of app app that is not being
// deleted, on node ("" for any).
func (m *migration) readyPod(app, node string) (corev1.Pod, bool) {
	list, err := m.cp.client.CoreV1().Pods(m.ns).List(m.t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return corev1.Pod{}, false
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) && (node == "" || p.Spec.NodeName == node) {
			return p, true
		}
	}
	return corev1.Pod{}, false
}

// podReady reports the pod's Ready condition.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitBackend waits until a backend pod on node n is Ready, and returns
// it.
func (m *migration) waitBackend(n *kubeNode) corev1.Pod {
	var p corev1.Pod
	waitFor(m.t, "a Ready backend pod on "+n.name, replacementTimeout, 100*time.Millisecond, func() (bool, string) {
		var ok bool
		p, ok = m.readyPod("backend", n.name)
		return ok, "none yet; pods: " + strings.Join(slices.Sorted(maps.Keys(m.podStates())), ", ")
	})
	return p
}

// podStates describes the namespace's pods, for a message.
func (m *migration) podStates() map[string]bool {
	out := map[string]bool{}
	list, err := m.cp.client.CoreV1().Pods(m.ns).List(m.t.Context(), metav1.ListOptions{})
	if err != nil {
		return map[string]bool{err.Error(): true}
	}
	for _, p := range list.Items {
		out[fmt.Sprintf("%s on %q %s ready %v deleted %v", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(p), p.DeletionTimestamp != nil)] = true
	}
	return out
}
