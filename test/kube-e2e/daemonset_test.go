package kubee2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stage 3 runs nri-podnet as the DaemonSet of deploy/overlays/nri-podnet,
// with the image hack/image built from this checkout (env.podnetImage).
const (
	podnetNamespace = "nrinet-system"
	podnetSelector  = "app.kubernetes.io/name=nri-podnet"
	// podnetReadyTimeout bounds how long the DaemonSet's pod takes to be
	// Ready (its readiness probe, /readyz, passes), and podnetGoneTimeout
	// how long it takes to be gone once deleted.
	podnetReadyTimeout = 90 * time.Second
	podnetGoneTimeout  = 60 * time.Second
	// podnetAwayLabel is a label no Node has: with it as the DaemonSet's
	// nodeSelector, the DaemonSet runs no pod (nri-podnet down).
	podnetAwayLabel = "nrinet.io/e2e-no-such-node"
)

// podnetOverlay writes the test's kustomize overlay on top of
// deploy/overlays/nri-podnet into dir/podnet-overlay and returns its
// directory. It changes only what the test's node needs (docs/kube-e2e.md,
// "The DaemonSet overlay"):
//
//   - the image tag: the image built from this checkout;
//   - cluster-cidr (ConfigMap): the controller-manager's --cluster-cidr;
//   - KUBERNETES_SERVICE_HOST/PORT: the apiserver's underlay address and
//     port (there is no kube-proxy, so the kubernetes Service's address
//     leads nowhere);
//   - the hostPath of the nri volume: the directory of the node's
//     containerd NRI socket (the container still sees it as
//     /var/run/nri/nri.sock);
//   - the netns volume: containerd mounts the pods' network namespaces
//     under its state directory (netns_mounts_under_state_dir), and the
//     plugin opens the path containerd gives it, so that directory is
//     mounted at the same path in the container;
//   - the hostPath of the state volume: under the node's directory, not
//     the host's /var/lib/nri-podnet.
func (n *kubeNode) podnetOverlay() string {
	t := n.t
	t.Helper()
	dir := filepath.Join(n.dir, "podnet-overlay")
	base, err := filepath.Abs(filepath.Join("..", "..", "deploy", "overlays", "nri-podnet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(n.cp.server)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), fmt.Sprintf(`# Written by test/kube-e2e (docs/kube-e2e.md, "The DaemonSet overlay").
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %[1]s
images:
- name: localhost/nrinet/nri-podnet
  newTag: %[2]q
patches:
- target:
    kind: ConfigMap
    name: nri-podnet-config
  patch: |-
    - op: replace
      path: /data/cluster-cidr
      value: %[3]q
- target:
    kind: DaemonSet
    name: nri-podnet
  patch: |-
    - op: test
      path: /spec/template/spec/containers/0/volumeMounts/2/name
      value: netns
    - op: replace
      path: /spec/template/spec/containers/0/volumeMounts/2/mountPath
      value: %[4]q
- patch: |-
    apiVersion: apps/v1
    kind: DaemonSet
    metadata:
      name: nri-podnet
      namespace: nrinet-system
    spec:
      template:
        spec:
          containers:
          - name: nri-podnet
            env:
            - name: KUBERNETES_SERVICE_HOST
              value: %[5]q
            - name: KUBERNETES_SERVICE_PORT
              value: %[6]q
          volumes:
          - name: nri
            hostPath:
              path: %[7]q
          - name: netns
            hostPath:
              path: %[4]q
          - name: state
            hostPath:
              path: %[8]q
`, rel, env.podnetTag, clusterCIDR4.String()+","+clusterCIDR6.String(), n.netnsDir,
		u.Hostname(), u.Port(), filepath.Dir(n.nriSock), n.podnetState))
	return dir
}

// shareNetnsDir makes containerd's network namespace directory a shared
// mount point before containerd starts, as iproute2 does with
// /var/run/netns: the DaemonSet mounts it with mountPropagation
// HostToContainer, which containerd refuses on a private mount (this
// host's / is one), and through which the plugin sees the namespaces of
// pods made after it started. The cleanup (after containerd stopped)
// unmounts it.
func (n *kubeNode) shareNetnsDir() {
	t := n.t
	if err := os.MkdirAll(n.netnsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(n.netnsDir, n.netnsDir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting %s: %v", n.netnsDir, err)
	}
	t.Cleanup(func() { unmountUnder(t, n.netnsDir) })
	if err := unix.Mount("", n.netnsDir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("making %s shared: %v", n.netnsDir, err)
	}
}

// deployPodnet imports nri-podnet's image into the node's containerd and
// applies the test's overlay (podnetOverlay) with kubectl apply -k; then
// waits until the DaemonSet's pod on the node is Ready and the Node is
// Ready.
func (n *kubeNode) deployPodnet() {
	t := n.t
	t.Helper()
	n.importImage(env.podnetImage, "localhost/nrinet/nri-podnet:"+env.podnetTag)
	n.overlay = n.podnetOverlay()
	start := time.Now()
	out := n.cp.kubectl("apply", "-k", n.overlay)
	t.Logf("kubectl apply -k %s:\n%s", n.overlay, out)
	p := n.waitPodnetPod("")
	t.Logf("DaemonSet pod %s Ready %v after kubectl apply", p.Name, time.Since(start).Round(time.Millisecond))
}

// podnetPods returns the DaemonSet's pods on the node (deleted ones too).
func (n *kubeNode) podnetPods() []corev1.Pod {
	t := n.t
	list, err := n.cp.client.CoreV1().Pods(podnetNamespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: podnetSelector, FieldSelector: "spec.nodeName=" + n.name})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("listing nri-podnet's pods: %v", err)
	}
	return list.Items
}

// waitPodnetPod waits until the DaemonSet's pod on the node, other than
// the pod of UID old, is Ready (its readiness probe: nri-podnet's /readyz),
// and the Node is Ready; it returns the pod.
func (n *kubeNode) waitPodnetPod(old string) corev1.Pod {
	t := n.t
	t.Helper()
	var ready corev1.Pod
	waitFor(t, "nri-podnet's DaemonSet pod Ready on "+n.name, podnetReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		var states []string
		for _, p := range n.podnetPods() {
			states = append(states, fmt.Sprintf("%s %s deleted %v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil))
			if string(p.UID) == old || p.DeletionTimestamp != nil || !p.Spec.HostNetwork {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = p
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("pods %v", states)
	})
	n.waitReady()
	return ready
}

// waitPodnetGone waits until the node has no pod of the DaemonSet in the
// API and no ready sandbox of it in CRI.
func (n *kubeNode) waitPodnetGone() {
	t := n.t
	t.Helper()
	waitFor(t, "nri-podnet's pod gone from "+n.name, podnetGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		api := len(n.podnetPods())
		// The kubelet stops the sandbox at once and removes it only at
		// its next garbage collection (every minute).
		out, errOut, err := n.crictl("pods", "-q", "--namespace", podnetNamespace, "--state", "ready")
		if err != nil {
			return false, errOut
		}
		cri := len(strings.Fields(out))
		return api == 0 && cri == 0, fmt.Sprintf("%d pods in the API, %d ready sandboxes in CRI", api, cri)
	})
}

// restartPodnet deletes the DaemonSet's pod (kubectl delete pod) and
// waits until the DaemonSet's new pod is Ready and the Node is Ready.
func (n *kubeNode) restartPodnet() {
	t := n.t
	t.Helper()
	pods := n.podnetPods()
	if len(pods) != 1 {
		t.Fatalf("%d nri-podnet pods on %s, want 1", len(pods), n.name)
	}
	n.cp.kubectl("delete", "pod", "-n", podnetNamespace, pods[0].Name)
	p := n.waitPodnetPod(string(pods[0].UID))
	t.Logf("DaemonSet pod %s replaced by %s", pods[0].Name, p.Name)
}

// podnetAway takes nri-podnet off the node (away true: the DaemonSet's
// nodeSelector gets a label no Node has, and the DaemonSet deletes its
// pod) or puts it back (the label removed).
func (n *kubeNode) podnetAway(away bool) {
	value := "null"
	if away {
		value = `"true"`
	}
	n.cp.kubectl("patch", "daemonset", "-n", podnetNamespace, "nri-podnet", "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%s}}}}}`, podnetAwayLabel, value))
	if away {
		n.waitPodnetGone()
	}
}

// kubectl runs kubectl as the admin and fails the test if it fails.
func (cp *controlPlane) kubectl(args ...string) string {
	t := cp.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(env.kubeBin, "kubectl"), append([]string{"--kubeconfig", cp.adminConfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
