package kubee2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestHelm's release: docs/deploy.md's helm install, with the values the
// test's node needs (helmValues).
const (
	helmRelease   = "nrinet"
	helmNamespace = "kube-system"
	// helmChart is the chart, from test/kube-e2e.
	helmChart = "../../deploy/helm/nrinet"
	// chartSelector selects every object the chart makes, and the
	// DaemonSet's pods and ControllerRevisions (their template's labels):
	// the label all of them carry.
	chartSelector = "app.kubernetes.io/part-of=nrinet"
	// helmManagedSelector is the label Helm puts on what it installs.
	helmManagedSelector = "app.kubernetes.io/managed-by=Helm"
	// helmReplicas is the stage's Deployment's size.
	helmReplicas = 2
	// helmGoMemLimit is the value helm upgrade changes (goMemLimit, the
	// container's GOMEMLIMIT; the chart's default is helmGoMemLimitDefault).
	helmGoMemLimit        = "128MiB"
	helmGoMemLimitDefault = "96MiB"
)

// TestHelm installs nri-podnet with the Helm chart deploy/helm/nrinet
// (make e2e-helm, and part of make e2e-kube; docs/dev/kube-e2e.md): a
// control plane of its own, kube-scheduler and a real node (stage 3's:
// the kubelet, containerd on nrinet in network mode nri); deploy/test's
// cmd/helm-release, Helm v4's library, runs helm install, upgrade,
// status and uninstall against it. Checked: the release deployed
// (revision 1), every object of its manifest in the API with Helm's label
// and annotations, found by the chart's label; once the node is labelled,
// the DaemonSet's pod Ready there (and nowhere else), with the image of
// the values; pods of a Deployment get their addresses and ping each
// other; helm upgrade with goMemLimit changed (revision 2) rolls the
// DaemonSet: a new pod with the new GOMEMLIMIT, Ready, and the pods keep
// their sandboxes and addresses and still ping each other; helm uninstall
// removes every object of the chart (nothing left with the chart's label
// or Helm's, no release record) and leaves the node as the DaemonSet's
// uninstall does (stage 4, uninstallPodnet): nri-podnet's bridge, table
// and routes stay until nri-podnet -uninstall removes them.
func TestHelm(t *testing.T) {
	skipUnlessEnabled(t)
	start := time.Now()
	bin := buildHelmRelease(t)
	t.Logf("cmd/helm-release built in %v", time.Since(start).Round(time.Millisecond))

	cp := startControlPlane(t)
	helm := &helmRun{t: t, bin: bin, cp: cp}
	cp.startScheduler()
	cp.monitoringCRDs()
	n := launchKubeNode(t, cp, "h", kubeNodeOptions{})
	values := cp.helmValues(n)
	defer func() {
		if t.Failed() {
			t.Logf("nri-podnet's log:\n%s", n.podnetLog(60))
		}
	}()

	// helm install; then the node's label (docs/deploy.md, "Install with
	// Helm").
	step := time.Now()
	rel := helm.must("install", "-chart", helmChart, "-f", values)
	checkRelease(t, "helm install", rel, 1, "deployed")
	if st := helm.must("status"); st.Revision != 1 || st.Status != "deployed" {
		t.Errorf("helm status after the install: revision %d, %s; want 1, deployed", st.Revision, st.Status)
	}
	n.labelPodNetwork(true)
	pod := n.waitPodnetPod("")
	t.Logf("helm install, node labelled: DaemonSet pod %s Ready, Node Ready, in %v", pod.Name, time.Since(step).Round(time.Millisecond))
	cp.checkHelmObjects(rel)
	cp.checkDashboard()
	n.checkHelmPod(pod, podnetImageRef(env.podnetTag), helmGoMemLimitDefault)
	peer := n.addPeerNode()

	// The pods get their network.
	ns := "nrke-" + cp.token + "-helm"
	createNamespace(t, cp, ns)
	step = time.Now()
	createBusybox(t, cp, ns, helmReplicas)
	before := n.checkPods(runningPods(t, cp, ns, helmReplicas), kubectlWide(t, cp, ns))
	t.Logf("%d pods Running %v after the Deployment was created", helmReplicas, time.Since(step).Round(time.Millisecond))
	for _, from := range before {
		n.pingAll(t, "ping", from, before)
	}

	// helm upgrade with a changed value: the DaemonSet rolls.
	step = time.Now()
	up := helm.must("upgrade", "-chart", helmChart, "-f", values, "-set", "goMemLimit="+helmGoMemLimit, "-wait", "-timeout", podnetReadyTimeout.String())
	checkRelease(t, "helm upgrade", up, 2, "deployed")
	next := n.waitPodnetPod(string(pod.UID))
	n.checkHelmPod(next, podnetImageRef(env.podnetTag), helmGoMemLimit)
	after := n.checkPods(runningPods(t, cp, ns, helmReplicas), kubectlWide(t, cp, ns))
	checkSamePods(t, "after helm upgrade", before, after)
	for _, from := range after {
		n.pingAll(t, "ping-after-upgrade", from, after)
	}
	t.Logf("helm upgrade --set goMemLimit=%s: pod %s replaced by %s, pods kept, in %v", helmGoMemLimit, pod.Name, next.Name, time.Since(step).Round(time.Millisecond))

	// helm uninstall, the pods gone first (docs/deploy.md, "Uninstall").
	deleteBusybox(t, cp, ns)
	n.uninstallPodnet(peer, "helm uninstall", func() string {
		out := helm.must("uninstall", "-wait", "-timeout", podnetGoneTimeout.String())
		checkRelease(t, "helm uninstall", out, 2, "uninstalled")
		helm.checkGone(rel)
		return fmt.Sprintf("release %s revision %d %s", out.Name, out.Revision, out.Status)
	})
	t.Logf("TestHelm: %v", time.Since(start).Round(time.Millisecond))
}

// A helmRun runs deploy/test's cmd/helm-release, bin, against a control
// plane.
type helmRun struct {
	t   testing.TB
	bin string
	cp  *controlPlane
}

// buildHelmRelease builds deploy/test's cmd/helm-release (in the module
// deploy, outside the workspace: GOWORK=off) into the suite's directory
// and returns its path. Without symbols and DWARF (-s -w): the binary
// links in half the time.
func buildHelmRelease(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(env.dir, "helm-release")
	cmd := testutil.GoBuildCmd(filepath.Join("..", "..", "deploy"), "-ldflags=-s -w", "-o", bin, "./test/cmd/helm-release")
	cmd.Env = append(cmd.Env, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s (in %s): %v\n%s", strings.Join(cmd.Args, " "), cmd.Dir, err, out)
	}
	return bin
}

// helmReleaseOut is what cmd/helm-release prints of a release.
type helmReleaseOut struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	Status    string `json:"status"`
	Chart     string `json:"chart"`
	Objects   []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Namespace  string `json:"namespace"`
		Name       string `json:"name"`
	} `json:"objects"`
}

// errNoRelease is cmd/helm-release's exit status 3: no such release.
var errNoRelease = errors.New("no such release")

// run runs helm-release cmd for the release helmRelease in helmNamespace
// with the admin's kubeconfig, and returns the release it prints; with
// exit status 3, errNoRelease.
func (h *helmRun) run(cmd string, args ...string) (helmReleaseOut, error) {
	ctx, cancel := context.WithTimeout(h.t.Context(), 3*time.Minute)
	defer cancel()
	args = append([]string{cmd, "-kubeconfig", h.cp.adminConfig, "-namespace", helmNamespace, "-release", helmRelease}, args...)
	c := exec.CommandContext(ctx, h.bin, args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var rel helmReleaseOut
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
		return rel, fmt.Errorf("helm-release %s: %w: %s", strings.Join(args, " "), errNoRelease, stderr.Bytes())
	}
	if err != nil {
		return rel, fmt.Errorf("helm-release %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), &rel); err != nil {
		return rel, fmt.Errorf("helm-release %s: %v in %q", strings.Join(args, " "), err, stdout.Bytes())
	}
	h.t.Logf("helm-release %s: %s%s", cmd, bytes.TrimSpace(stdout.Bytes()), stderr.Bytes())
	return rel, nil
}

// must runs helm-release as run does and fails the test if it fails.
func (h *helmRun) must(cmd string, args ...string) helmReleaseOut {
	h.t.Helper()
	rel, err := h.run(cmd, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return rel
}

// checkRelease checks a release cmd/helm-release printed after what:
// nrinet in kube-system, nrinet's chart, of revision and status.
func checkRelease(t testing.TB, what string, rel helmReleaseOut, revision int, status string) {
	t.Helper()
	if rel.Name != helmRelease || rel.Namespace != helmNamespace || rel.Revision != revision || rel.Status != status || !strings.HasPrefix(rel.Chart, "nrinet-") {
		t.Errorf("%s: release %s in %s, revision %d, %s, chart %s; want %s in %s, revision %d, %s, chart nrinet",
			what, rel.Name, rel.Namespace, rel.Revision, rel.Status, rel.Chart, helmRelease, helmNamespace, revision, status)
	}
}

// helmValues writes the stage's values file into the control plane's
// directory and returns its path: docs/deploy.md's helm install values
// (the image as make image-push pushes it, the cluster's CIDRs) for the
// suite's registry and cluster, and what the test's node needs of the
// chart (docs/dev/kube-e2e.md, "TestHelm"): the apiserver's address, as
// the node has no kube-proxy, and the node's NRI socket directory and
// state directory under the control plane's directory. All three
// monitoring objects are on.
func (cp *controlPlane) helmValues(n *kubeNode) string {
	t := cp.t
	u, err := url.Parse(cp.server)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"image": map[string]any{
			"repository": env.registry.repository() + "/nri-podnet",
			"tag":        env.podnetTag,
			"pullPolicy": "IfNotPresent",
		},
		"clusterCIDR": clusterCIDR4.String() + "," + clusterCIDR6.String(),
		"extraEnv": []map[string]string{
			{"name": "KUBERNETES_SERVICE_HOST", "value": u.Hostname()},
			{"name": "KUBERNETES_SERVICE_PORT", "value": u.Port()},
		},
		"hostPaths":  map[string]string{"nri": filepath.Dir(n.nriSock), "state": n.podnetState},
		"monitoring": map[string]bool{"podMonitor": true, "rules": true, "dashboard": true},
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cp.dir, "helm-values.yaml")
	writeFile(t, path, "# Written by test/kube-e2e (docs/dev/kube-e2e.md, \"TestHelm\").\n"+string(b))
	t.Logf("values of the release (%s):\n%s", path, b)
	return path
}

// monitoringCRDs creates CustomResourceDefinitions of the Prometheus
// Operator's kinds PodMonitor and PrometheusRule (monitoring.coreos.com/v1)
// that accept any object, and waits until they are established: the API
// then stores the chart's PodMonitor and PrometheusRule, which no operator
// reads here.
func (cp *controlPlane) monitoringCRDs() {
	t := cp.t
	var docs []string
	for _, k := range []struct{ kind, plural string }{{"PodMonitor", "podmonitors"}, {"PrometheusRule", "prometheusrules"}} {
		docs = append(docs, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names:
    kind: %[1]s
    listKind: %[1]sList
    plural: %[2]s
    singular: %[3]s
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, k.kind, k.plural, strings.ToLower(k.kind)))
	}
	path := filepath.Join(cp.dir, "monitoring-crds.yaml")
	writeFile(t, path, "# Written by test/kube-e2e (docs/dev/kube-e2e.md, \"TestHelm\").\n---\n"+strings.Join(docs, "---\n"))
	cp.kubectl("apply", "-f", path)
	cp.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/podmonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
}

// checkHelmObjects checks that every object of the release's manifest is
// in the API, labelled and annotated as Helm's (app.kubernetes.io/managed-by:
// Helm, meta.helm.sh/release-name and -namespace), and among the objects
// the chart's label selects (apiObjects).
func (cp *controlPlane) checkHelmObjects(rel helmReleaseOut) {
	t := cp.t
	t.Helper()
	labelled := cp.apiObjects(chartSelector)
	var kinds []string
	for _, o := range rel.Objects {
		key := o.Kind + " " + o.Namespace + "/" + o.Name
		kinds = append(kinds, o.Kind)
		obj, ok := labelled[key]
		if !ok {
			t.Errorf("%s of the release is not among the objects labelled %s: %v", key, chartSelector, slices.Sorted(maps.Keys(labelled)))
			continue
		}
		if obj.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" ||
			obj.GetAnnotations()["meta.helm.sh/release-name"] != helmRelease ||
			obj.GetAnnotations()["meta.helm.sh/release-namespace"] != helmNamespace {
			t.Errorf("%s: labels %v, annotations %v; want Helm's (managed-by Helm, release %s in %s)", key, obj.GetLabels(), obj.GetAnnotations(), helmRelease, helmNamespace)
		}
	}
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "ConfigMap", "DaemonSet", "Namespace", "PodMonitor", "PrometheusRule", "ServiceAccount"}
	if slices.Sort(kinds); !slices.Equal(kinds, want) {
		t.Errorf("the release's objects are of kinds %q, want %q", kinds, want)
	}
	t.Logf("the release's %d objects are in the API, Helm's; %d objects labelled %s (with the DaemonSet's pod and revision)", len(rel.Objects), len(labelled), chartSelector)
}

// checkGone checks, after helm uninstall of rel, that nothing is left of
// it: no object the chart's label or Helm's selects (apiObjects), and no
// release record (helm status: no such release; no Secret of Helm's for
// it).
func (h *helmRun) checkGone(rel helmReleaseOut) {
	t, cp := h.t, h.cp
	t.Helper()
	for _, sel := range []string{chartSelector, helmManagedSelector} {
		if left := cp.apiObjects(sel); len(left) != 0 {
			t.Errorf("after helm uninstall, objects labelled %s are left: %v", sel, slices.Sorted(maps.Keys(left)))
		}
	}
	if st, err := h.run("status"); !errors.Is(err, errNoRelease) {
		t.Errorf("helm status after helm uninstall: %+v, %v; want no such release", st, err)
	}
	secrets, err := cp.client.CoreV1().Secrets(helmNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + helmRelease})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("after helm uninstall, %d release records (Secrets) of %s left in %s", len(secrets.Items), helmRelease, helmNamespace)
	}
	t.Logf("after helm uninstall: none of the release's %d objects, nothing labelled %s or %s, no release record", len(rel.Objects), chartSelector, helmManagedSelector)
}

// apiObjects lists, with the label selector sel, every kind of object the
// API serves and can list, in every namespace, and returns them by "kind
// namespace/name".
func (cp *controlPlane) apiObjects(sel string) map[string]*unstructured.Unstructured {
	t := cp.t
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	// Some 60 requests: client-go's default of 5 a second would make them
	// take 10 s. The deprecation warnings of the kinds listed are not the
	// test's.
	cfg.QPS, cfg.Burst = 500, 500
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API's resources, discovered anew: the CRDs are among them.
	lists, err := disc.ServerPreferredResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				t.Fatalf("listing %s %s labelled %s: %v", l.GroupVersion, r.Name, sel, err)
			}
			for i := range items.Items {
				o := &items.Items[i]
				out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
			}
		}
	}
	return out
}

// checkDashboard checks the dashboard's ConfigMap the release made: the
// label of Grafana's sidecar, and the dashboard, JSON whose uid is
// nrinet's.
func (cp *controlPlane) checkDashboard() {
	t := cp.t
	t.Helper()
	cm, err := cp.client.CoreV1().ConfigMaps(podnetNamespace).Get(t.Context(), "nrinet-dashboard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID string `json:"uid"`
	}
	if err := json.Unmarshal([]byte(cm.Data["nrinet-dashboard.json"]), &dash); err != nil || dash.UID != "nrinet" || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s/nrinet-dashboard: labels %v, dashboard uid %q (%v); want grafana_dashboard: \"1\" and uid nrinet", podnetNamespace, cm.Labels, dash.UID, err)
	}
}

// checkHelmPod checks the DaemonSet's pod the release runs: on the node,
// the only pod of the DaemonSet (the peer Node is not labelled), with the
// image of the values and GOMEMLIMIT goMemLimit.
func (n *kubeNode) checkHelmPod(p corev1.Pod, image, goMemLimit string) {
	t := n.t
	t.Helper()
	all, err := n.cp.client.CoreV1().Pods(podnetNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: podnetSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range all.Items {
		if q.Spec.NodeName != n.name && q.DeletionTimestamp == nil {
			t.Errorf("the DaemonSet's pod %s runs on %s, a Node not labelled %s=%s", q.Name, q.Spec.NodeName, podNetworkLabel, podNetworkPodnet)
		}
	}
	if len(p.Spec.Containers) != 1 {
		t.Fatalf("the DaemonSet's pod %s has containers %v, want one", p.Name, p.Spec.Containers)
	}
	c := p.Spec.Containers[0]
	var mem string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			mem = e.Value
		}
	}
	if c.Image != image || c.ImagePullPolicy != corev1.PullIfNotPresent || mem != goMemLimit {
		t.Errorf("the DaemonSet's pod %s: image %s (%s), GOMEMLIMIT %q; want %s (IfNotPresent), %q", p.Name, c.Image, c.ImagePullPolicy, mem, image, goMemLimit)
	}
}
