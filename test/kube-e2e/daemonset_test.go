package kubee2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stage 3 runs nri-podnet as the DaemonSet of deploy/overlays/nri-podnet,
// with the image hack/image built from this checkout and pushed to the
// suite's registry (env.registry).
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
	// podNetworkLabel opts a Node in: the DaemonSet of deploy/ runs only
	// on Nodes labelled podNetworkLabel=podNetworkPodnet (its
	// nodeSelector; docs/deploy.md), which say their runtime is on nrinet
	// in network mode nri with podnet as its required network plugin.
	podNetworkLabel  = "nrinet.io/pod-network"
	podNetworkPodnet = "podnet"
)

// podnetOverlay writes the test's kustomize overlay on top of
// deploy/overlays/nri-podnet into the control plane's directory (once:
// one DaemonSet serves every node of the control plane) and returns its
// directory. It changes only what the test's nodes need (docs/dev/kube-e2e.md,
// "The DaemonSet overlay"):
//
//   - the image (kustomize's images setting, as docs/install.md sets
//     it): the suite's registry and the tag of the image built from this
//     checkout, which each node's containerd pulls;
//   - cluster-cidr (ConfigMap): the controller-manager's --cluster-cidr
//     (one family in a single-stack cluster);
//   - unless direct is false, KUBERNETES_SERVICE_HOST/PORT: the
//     apiserver's underlay address and port (without kube-proxy the
//     kubernetes Service's address leads nowhere);
//   - the hostPaths of the nri and state volumes: a directory of the
//     control plane (<dir>/nri, <dir>/podnet-state), of which each node's
//     pod mounts the subdirectory named after its Node (subPathExpr
//     $(NODE_NAME), the DaemonSet's own variable): the nodes share the
//     host's file system, and a node's containerd has its NRI socket in
//     <dir>/nri/<Node>/ (the container still sees /var/run/nri/nri.sock);
//   - with crio (a CRI-O node in the cluster), the netns volume's hostPath
//     /run/netns instead of /var/run/netns: the same directory (/var/run
//     is a link to /run), but CRI-O requires the source of a
//     HostToContainer mount to be on a shared or slave mount and finds
//     that mount by the path as written, without resolving /var/run: for
//     /var/run/netns it judges /, which is a private mount on this
//     machine, and refuses the container; /run/netns is a shared mount
//     point of its own (iproute2 makes it one). docs/crio.md says so.
func (cp *controlPlane) podnetOverlay(direct, crio bool) string {
	cp.t.Helper()
	return cp.writePodnetOverlay(podnetOverlaySpec{name: "podnet-overlay", base: "nri-podnet", direct: direct, crio: crio})
}

// podnetOverlaySpec says what writePodnetOverlay writes.
type podnetOverlaySpec struct {
	// name is the overlay's directory under the control plane's, base
	// the overlay of deploy/overlays it builds on.
	name, base string
	// direct and crio are podnetOverlay's.
	direct, crio bool
	// files are more files of the overlay (name → content), patches more
	// entries of its patches list (YAML, each starting with "- ").
	files   map[string]string
	patches string
}

// writePodnetOverlay writes the test's overlay of spec (podnetOverlay's
// changes, then spec's patches) and returns its directory.
func (cp *controlPlane) writePodnetOverlay(spec podnetOverlaySpec) string {
	t := cp.t
	t.Helper()
	direct, crio := spec.direct, spec.crio
	dir := filepath.Join(cp.dir, spec.name)
	base, err := filepath.Abs(filepath.Join("..", "..", "deploy", "overlays", spec.base))
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
	u, err := url.Parse(cp.server)
	if err != nil {
		t.Fatal(err)
	}
	netnsVolume := ""
	if crio {
		netnsVolume = `
          - name: netns
            hostPath:
              path: /run/netns`
	}
	apiserverEnv := ""
	if direct {
		apiserverEnv = fmt.Sprintf(`
            env:
            - name: KUBERNETES_SERVICE_HOST
              value: %q
            - name: KUBERNETES_SERVICE_PORT
              value: %q`, u.Hostname(), u.Port())
	}
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), fmt.Sprintf(`# Written by test/kube-e2e (docs/dev/kube-e2e.md, "The DaemonSet overlay").
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %[1]s
images:
- name: localhost/nrinet/nri-podnet
  newName: %[7]s
  newTag: %[2]q
patches:
- target:
    kind: ConfigMap
    name: nri-podnet-config
  patch: |-
    - op: replace
      path: /data/cluster-cidr
      value: %[3]q
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
          - name: nri-podnet%[4]s
            volumeMounts:
            - mountPath: /var/run/nri
              subPathExpr: $(NODE_NAME)
            - mountPath: /var/lib/nri-podnet
              subPathExpr: $(NODE_NAME)
          volumes:
          - name: nri
            hostPath:
              path: %[5]q
          - name: state
            hostPath:
              path: %[6]q%[8]s
%[9]s`, rel, env.podnetTag, joinPrefixes(cp.family().clusterCIDRs()), apiserverEnv,
		filepath.Join(cp.dir, "nri"), filepath.Join(cp.dir, "podnet-state"), env.registry.repository()+"/nri-podnet", netnsVolume,
		spec.patches))
	for name, content := range spec.files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	return dir
}

// deployPodnet applies the test's overlay (podnetOverlay) with kubectl
// apply -k and opts each node in (labelPodNetwork), as docs/deploy.md's
// install does; each node's containerd pulls nri-podnet's image from the
// suite's registry; then it waits until the DaemonSet's pod on each node
// is Ready and the Node is Ready. Without kube-proxy on the nodes, the
// pods reach the apiserver directly.
func deployPodnet(t testing.TB, nodes ...*kubeNode) {
	t.Helper()
	cp := nodes[0].cp
	direct, crio := false, false
	for _, n := range nodes {
		direct = direct || !n.opts.kubeProxy
		crio = crio || n.opts.crio
	}
	start := time.Now()
	overlay := cp.applyPodnet(direct, crio)
	for _, n := range nodes {
		n.overlay = overlay
		n.labelPodNetwork(true)
	}
	for _, n := range nodes {
		p := n.waitPodnetPod("")
		t.Logf("DaemonSet pod %s Ready on %s %v after kubectl apply", p.Name, n.name, time.Since(start).Round(time.Millisecond))
	}
}

// applyPodnet writes the test's overlay (podnetOverlay) and applies it
// with kubectl apply -k; it returns the overlay's directory. The
// DaemonSet runs on no Node until one is labelled (labelPodNetwork).
func (cp *controlPlane) applyPodnet(direct, crio bool) string {
	t := cp.t
	t.Helper()
	overlay := cp.podnetOverlay(direct, crio)
	out := cp.kubectl("apply", "-k", overlay)
	t.Logf("kubectl apply -k %s:\n%s", overlay, out)
	return overlay
}

// labelPodNetwork opts the node in (kubectl label node <node>
// nrinet.io/pod-network=podnet: the DaemonSet puts its pod there) or out
// (the label removed: the DaemonSet deletes its pod there).
func (n *kubeNode) labelPodNetwork(on bool) {
	n.t.Helper()
	label := podNetworkLabel + "=" + podNetworkPodnet
	if !on {
		label = podNetworkLabel + "-"
	}
	n.cp.kubectl("label", "node", n.name, label)
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

// upgradePodnet upgrades nri-podnet to the image of tag as an operator
// does: kubectl set image on the DaemonSet, kubectl rollout status; the
// node's new pod runs that image, pulled from the registry (its image ID
// names the index hack/image pushed), Ready, and the Node Ready.
func (n *kubeNode) upgradePodnet(tag string) {
	t := n.t
	t.Helper()
	pods := n.podnetPods()
	if len(pods) != 1 {
		t.Fatalf("%d nri-podnet pods on %s, want 1", len(pods), n.name)
	}
	ref := podnetImageRef(tag)
	n.cp.kubectl("set", "image", "-n", podnetNamespace, "daemonset/nri-podnet", "nri-podnet="+ref)
	out := n.cp.kubectl("rollout", "status", "-n", podnetNamespace, "daemonset/nri-podnet", "--timeout="+podnetReadyTimeout.String())
	p := n.waitPodnetPod(string(pods[0].UID))
	wantID := env.registry.repository() + "/nri-podnet@" + env.podnetDigests[tag]
	switch {
	case len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != ref:
		t.Errorf("the DaemonSet's new pod %s runs %v, want image %s", p.Name, p.Spec.Containers, ref)
	case len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != wantID:
		t.Errorf("the DaemonSet's new pod %s has container statuses %+v, want image ID %s (the index pushed)", p.Name, p.Status.ContainerStatuses, wantID)
	}
	t.Logf("nri-podnet upgraded from %s to %s (%s): pod %s replaced by %s\n%s", pods[0].Spec.Containers[0].Image, ref, env.podnetDigests[tag], pods[0].Name, p.Name, strings.TrimSpace(out))
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
