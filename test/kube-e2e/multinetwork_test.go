package kubee2e

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestMultinetwork is the multi-network stage (issue 34;
// docs/multinetwork.md; docs/dev/kube-e2e.md, "Multi-network through DRA",
// says what each step checks): a control plane with the resourceclaim
// controller and the scheduler, two real kubelet nodes on containerd on
// nrinet, a second L2 segment between them (secondaryUnderlay), and
// nri-podnet's DaemonSet of deploy/overlays/nri-podnet-multinetwork
// (multinetOverlay). Pods claim secondary networks through the
// ResourceClaimTemplates of deploy/examples/multinetwork: a bridged
// network across the two nodes, a macvlan network and a host interface
// moved into a pod; then nri-podnet is killed, the bad claims fail, a
// pod goes while nri-podnet is away, and once every pod is gone nothing
// of them is left.
func TestMultinetwork(t *testing.T) {
	start := time.Now()
	cp := startControlPlaneWith(t, controlPlaneOptions{extraControllers: []string{"resourceclaim-controller"}})
	lockKubeletHost(t)
	s := &multinetStage{t: t, cp: cp, nodes: map[string]*kubeNode{}, ns: "nrke-" + cp.token}
	s.sec = newSecondaryUnderlay(t, cp.token)
	cp.startScheduler()
	for _, suffix := range []string{"a", "b"} {
		s.nodes[suffix] = launchKubeNode(t, cp, suffix, kubeNodeOptions{hostLocked: true})
	}
	a, b := s.nodes["a"], s.nodes["b"]
	s.nicMAC = s.sec.attach(a, "a")
	s.sec.attach(b, "b")
	s.deploy()
	t.Logf("two nodes Ready with nri-podnet's DRA driver, ResourceSlices published, %v after the start", time.Since(start).Round(time.Millisecond))
	createNamespace(t, cp, s.ns)
	s.createTemplates()

	// Pods with claims: net1 (and net2) from the secondary networks, eth0
	// as ever.
	start = time.Now()
	s.createPod("a1", "a", false, podClaim{name: "blue", template: "blue"}, podClaim{name: "lan", template: "lan"})
	s.createPod("b1", "b", false, podClaim{name: "blue", template: "blue"}, podClaim{name: "lan", template: "lan"})
	s.createPod("a2", "a", false, podClaim{name: "nic", template: "nic2"})
	for _, name := range []string{"a1", "b1", "a2"} {
		s.waitRunning(name, podsRunningTimeout)
	}
	t.Logf("3 pods with claims Running in %v", time.Since(start).Round(time.Millisecond))
	a1, b1, a2 := s.inspect("a1"), s.inspect("b1"), s.inspect("a2")
	for _, c := range []struct {
		p    *multinetPod
		nets []string
	}{{a1, []string{"blue", "lan"}}, {b1, []string{"blue", "lan"}}, {a2, []string{"nic2"}}} {
		var got []string
		for _, itf := range c.p.itfs {
			got = append(got, itf.network)
		}
		if !slices.Equal(got, c.nets) {
			t.Errorf("pod %s: interfaces net1... of networks %v, want %v (by claim name)", c.p.name, got, c.nets)
		}
	}
	s.checkTraffic("ping", a1, b1, a2)
	s.checkNodeState("a", a1, a2)
	s.checkNodeState("b", b1)

	// A standalone claim in two pods' resourceClaims, the second created
	// once the first runs (the kubelet prepares a claim once per node):
	// each pod gets net1.
	start = time.Now()
	s.sharedClaim()
	t.Logf("a claim shared by two pods, both with net1, gone with them, in %v", time.Since(start).Round(time.Millisecond))
	s.checkNodeState("a", a1, a2)

	// nri-podnet killed on node a (SIGKILL): the kubelet restarts its
	// container; nothing of the pods changes, and their traffic goes on.
	start = time.Now()
	a.killPodnet()
	t.Logf("nri-podnet on %s back %v after the kill", a.name, time.Since(start).Round(time.Millisecond))
	for _, before := range []*multinetPod{a1, a2} {
		checkSamePod(t, "after nri-podnet was killed", before, s.inspect(before.name))
	}
	s.checkTraffic("ping-after-kill", a1, b1, a2)
	s.checkNodeState("a", a1, a2)

	// The bad claims (docs/multinetwork.md): each pod fails with the
	// reason in an event and, where the driver got the claim, in its
	// status; nothing of it is left.
	start = time.Now()
	t1 := s.badClaims(a1, a2)
	t.Logf("bad claims refused in %v", time.Since(start).Round(time.Millisecond))

	// A host interface someone else took, then given back, and the tiny
	// subnet's address freed: both pods that failed for them start.
	start = time.Now()
	s.deletePods("a2")
	s.checkNodeState("a", a1, t1)
	t2, a4 := s.retryAfterFix(t1)
	t.Logf("failed pods started %v after their causes went", time.Since(start).Round(time.Millisecond))
	s.checkNodeState("a", a1, t2, a4)
	s.pingOver("ping-nic-again", a4, &multinetPod{name: "far", itfs: []podInterface{farEndInterface("nic2")}}, "net1")

	// A pod removed while nri-podnet is away: its sandbox stops, the
	// kubelet cannot unprepare its claims until the driver is back; once
	// the kubelet removes the sandbox, nri-podnet's RemovePodSandbox gives
	// back what it held.
	start = time.Now()
	s.removeWhileAway("b1")
	t.Logf("pod b1 removed while nri-podnet was away, gone once it came back, its sandbox removed, in %v", time.Since(start).Round(time.Millisecond))
	s.checkNodeState("b")

	// Every pod gone: no device, address or record left.
	start = time.Now()
	s.deletePods("a1", "t2", "a4")
	s.waitNoClaims()
	for _, suffix := range []string{"a", "b"} {
		s.checkNodeState(suffix)
		s.checkNoClaimsPrepared(suffix)
	}
	a.podnetAway(true)
	b.waitPodnetGone()
	for _, suffix := range []string{"a", "b"} {
		s.checkAllocators(suffix)
	}
	t.Logf("every pod gone, nothing of them left, in %v", time.Since(start).Round(time.Millisecond))
}

// deploy applies the test's overlay of nri-podnet-multinetwork
// (multinetOverlay) and opts both nodes in, as docs/multinetwork.md's
// install does; it waits until nri-podnet's pod is Ready on each node,
// the Nodes Ready, each node's ResourceSlice published, and nri-podnet's
// routes between the nodes' pod CIDRs made.
func (s *multinetStage) deploy() {
	deployMultinet(s.t, s.cp, s.nodes, true)
}

// deployMultinet applies the overlay of multinetOverlay (direct: the
// nodes run no kube-proxy), opts the nodes in, and waits for each node's
// DaemonSet pod, its ResourceSlice and nri-podnet's routes to the other
// nodes' pods.
func deployMultinet(t testing.TB, cp *controlPlane, nodes map[string]*kubeNode, direct bool) {
	t.Helper()
	start := time.Now()
	overlay := cp.multinetOverlay(nodes, direct)
	t.Logf("kubectl apply -k %s:\n%s", overlay, cp.kubectl("apply", "-k", overlay))
	for _, n := range nodes {
		n.overlay = overlay
		n.labelPodNetwork(true)
	}
	for _, suffix := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[suffix]
		p := n.waitPodnetPod("")
		t.Logf("DaemonSet pod %s Ready on %s %v after kubectl apply", p.Name, n.name, time.Since(start).Round(time.Millisecond))
		n.waitResourceSlice(suffix)
	}
	for _, n := range nodes {
		for _, o := range nodes {
			if o == n {
				continue
			}
			for _, c := range o.podCIDRs {
				via := o.addr4
				if c.Addr().Is6() {
					via = o.addr6
				}
				waitRoute(t, n.host, c, via)
			}
		}
	}
}

// createTemplates creates, in the stage's namespace, the
// ResourceClaimTemplates of deploy/examples/multinetwork (blue, lan,
// nic2) as they are, and two of the test's: tiny (network tiny) and
// nosuch (a network no node has).
func (s *multinetStage) createTemplates() {
	t := s.t
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", "multinetwork", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var templates []*resourcev1.ResourceClaimTemplate
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("deploy/examples/multinetwork/claims.yaml: %v", err)
		}
		if meta.Kind != "ResourceClaimTemplate" {
			continue
		}
		var tmpl resourcev1.ResourceClaimTemplate
		if err := yaml.Unmarshal([]byte(doc), &tmpl); err != nil {
			t.Fatalf("deploy/examples/multinetwork/claims.yaml: %v", err)
		}
		templates = append(templates, &tmpl)
	}
	templates = append(templates, networkTemplate("tiny", "tiny"), networkTemplate("nosuch", "nosuch"))
	for _, tmpl := range templates {
		if _, err := s.cp.client.ResourceV1().ResourceClaimTemplates(s.ns).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceClaimTemplate %s: %v", tmpl.Name, err)
		}
	}
}

// networkTemplate is a ResourceClaimTemplate name of one device of the
// driver's class on network, as the examples' are written.
func networkTemplate(name, network string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: network, Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: draDriver,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[%q].network == %q`, draDriver, network)}}},
			}}},
		}}},
	}
}

// farEndInterface is the far end's interface on network name, as a pod's
// (its addresses), to ping.
func farEndInterface(name string) podInterface {
	itf := podInterface{name: "net1", network: name}
	for _, p := range planNetwork(name).subnets {
		itf.addrs = append(itf.addrs, netip.PrefixFrom(farEndAddr(p), p.Bits()))
	}
	return itf
}

// checkTraffic pings, in both families: over eth0, pod to pod across the
// nodes (the primary network as ever); over net1, a1 and b1 to each other
// across the nodes on the bridged network blue, and each to the far end;
// over net2, a1 and b1 to each other on the macvlan network lan, and a1 to
// the far end; over a2's net1 (the host interface), the far end.
func (s *multinetStage) checkTraffic(what string, a1, b1, a2 *multinetPod) {
	far := func(network string) *multinetPod {
		return &multinetPod{name: "far", itfs: []podInterface{farEndInterface(network)}}
	}
	s.pingOver(what+"/eth0", a1, b1, "eth0")
	s.pingOver(what+"/eth0", b1, a1, "eth0")
	s.pingOver(what+"/eth0", a2, b1, "eth0")
	s.pingOver(what+"/blue", a1, b1, "net1")
	s.pingOver(what+"/blue", b1, a1, "net1")
	s.pingOver(what+"/blue", a1, far("blue"), "net1")
	s.pingOver(what+"/blue", b1, far("blue"), "net1")
	s.pingOver(what+"/lan", a1, b1, "net2")
	s.pingOver(what+"/lan", b1, a1, "net2")
	s.pingOver(what+"/lan", a1, far("lan"), "net1")
	s.pingOver(what+"/nic2", a2, far("nic2"), "net1")
}

// checkSamePod checks that the pod kept its sandbox, eth0's addresses and
// every secondary interface (name, network, MAC, addresses).
func checkSamePod(t testing.TB, when string, before, after *multinetPod) {
	t.Helper()
	if after.sandboxID != before.sandboxID || !slices.Equal(after.ips, before.ips) {
		t.Errorf("%s: pod %s has sandbox %.12s, eth0 %v (was %.12s, %v)", when, before.name, after.sandboxID, after.ips, before.sandboxID, before.ips)
	}
	if fmt.Sprint(after.itfs) != fmt.Sprint(before.itfs) {
		t.Errorf("%s: pod %s has interfaces %v (was %v)", when, before.name, after.itfs, before.itfs)
	}
}

// badClaims runs the bad claims of docs/multinetwork.md on node a, with
// a1 (blue) and a2 (nic2) running, and returns t1, the pod that holds the
// tiny network's one address:
//   - t2 asks for blue and tiny, whose one address t1 has: its sandbox
//     fails (an event names the subnet), both its claims' status say so,
//     and no blue interface or record of it is left (all or nothing);
//   - u1's claim asks for a network no node has: not scheduled;
//   - u2's claim was allocated a device the node's driver does not have
//     (as after the network left the node's configuration; the test
//     writes the allocation as the scheduler would): the kubelet's
//     NodePrepareResources fails naming it;
//   - h1, on the host network, claims blue: its sandbox fails, and the
//     claim's status says why;
//   - a3 claims nic2, which a2 has: not scheduled (a host interface is
//     one pod's).
func (s *multinetStage) badClaims(a1, a2 *multinetPod) *multinetPod {
	t := s.t
	t.Helper()
	s.createPod("t1", "a", false, podClaim{name: "tiny", template: "tiny"})
	s.waitRunning("t1", podsRunningTimeout)
	t1 := s.inspect("t1")
	s.createStaleClaim("stale", "gone")
	s.createPod("t2", "a", false, podClaim{name: "blue", template: "blue"}, podClaim{name: "tiny", template: "tiny"})
	s.createPod("u1", "a", false, podClaim{name: "net", template: "nosuch"})
	s.createPod("u2", "a", false, podClaim{name: "net", claim: "stale"})
	s.createPod("h1", "a", true, podClaim{name: "blue", template: "blue"})
	s.createPod("a3", "a", false, podClaim{name: "nic", template: "nic2"})

	exhausted := "no free address in " + planNetwork("tiny").subnets[0].String()
	hostNet := "a pod on the host network cannot take a secondary network"
	for _, c := range []struct {
		pod, reason, want string
		claims            bool // the driver got the claims: their status says why
		scheduled         bool
	}{
		{"t2", "FailedCreatePodSandBox", exhausted, true, true},
		{"u1", "FailedScheduling", "cannot allocate all claims", false, false},
		{"u2", "FailedPrepareDynamicResources", `no network "gone" on this node`, false, true},
		{"h1", "FailedCreatePodSandBox", hostNet, true, true},
		{"a3", "FailedScheduling", "cannot allocate all claims", false, false},
	} {
		msg := s.waitEvent(c.pod, c.reason, c.want)
		t.Logf("pod %s: event %s: %s", c.pod, c.reason, msg)
		if c.claims {
			for _, claim := range s.claims(s.pod(c.pod)) {
				t.Logf("pod %s: claim %s: Ready False: %s", c.pod, claim.Name, s.waitClaimFailed(claim.Name, c.want))
			}
		}
		p := s.pod(c.pod)
		if scheduled := p.Spec.NodeName != ""; scheduled != c.scheduled {
			t.Errorf("pod %s: scheduled %v (node %q), want %v", c.pod, scheduled, p.Spec.NodeName, c.scheduled)
		}
		if c.scheduled {
			s.checkNotRunning(c.pod, "a")
		}
	}
	s.checkNodeState("a", a1, a2, t1)
	s.deletePods("u1", "u2", "h1", "a3")
	return t1
}

// createStaleClaim creates claim name of one device of the driver's
// class and writes its allocation (as the scheduler writes one) of
// device on node a, which the node's driver does not have.
// sharedClaim makes claim shared-blue (the blue template's spec) and pods
// s1 then s2 on node a naming it: both get net1 of blue, each its own
// addresses, and reach each other over it, the claim's status following
// the last attach; then the pods and the claim go.
func (s *multinetStage) sharedClaim() {
	t := s.t
	t.Helper()
	ctx := t.Context()
	tmpl, err := s.cp.client.ResourceV1().ResourceClaimTemplates(s.ns).Get(ctx, "blue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared-blue", Namespace: s.ns}, Spec: tmpl.Spec.Spec}
	if _, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s: %v", c.Name, err)
	}
	// inspect checks the claim's status too: its one entry of the device
	// holds the last attach's networkData (docs/multinetwork.md), s1's
	// until s2 starts, then s2's.
	s.createPod("s1", "a", false, podClaim{name: "blue", claim: c.Name})
	s.waitRunning("s1", podsRunningTimeout)
	s1 := s.inspect("s1")
	s.createPod("s2", "a", false, podClaim{name: "blue", claim: c.Name})
	s.waitRunning("s2", podsRunningTimeout)
	s2 := s.inspect("s2")
	for _, p := range []*multinetPod{s1, s2} {
		if len(p.itfs) != 1 || p.itfs[0].network != "blue" || p.itfs[0].claim != c.Name {
			t.Errorf("pod %s of the shared claim: interfaces %+v, want net1 of blue from claim %s", p.name, p.itfs, c.Name)
		}
	}
	if len(s1.itfs) == 1 && len(s2.itfs) == 1 {
		if slices.Equal(s1.itfs[0].addrs, s2.itfs[0].addrs) {
			t.Errorf("pods s1 and s2 have the same net1 addresses %v", s1.itfs[0].addrs)
		}
		s.pingOver("ping-shared", s1, s2, "net1")
		s.pingOver("ping-shared", s2, s1, "net1")
	}
	s.deletePods("s1", "s2")
	if err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim "+c.Name+" gone", podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		_, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Get(ctx, c.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func (s *multinetStage) createStaleClaim(name, device string) {
	t := s.t
	t.Helper()
	ctx := t.Context()
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "net", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: draDriver}}}}},
	}
	created, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating claim %s: %v", name, err)
	}
	node := s.nodes["a"].name
	created.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "net", Driver: draDriver, Pool: node, Device: device}}},
		AllocationTimestamp: &metav1.Time{Time: time.Now()},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
	}
	if _, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("allocating claim %s: %v", name, err)
	}
}

// retryAfterFix takes node a's host interface of nic2 away from the node
// (into a namespace of the test's, as another agent would), and checks
// that pod a4, claiming it, fails with the claim's status saying so;
// then gives it back and deletes t1: the kubelet's next tries start t2
// (with the tiny address t1 had) and a4 (with the interface). It returns
// them.
func (s *multinetStage) retryAfterFix(t1 *multinetPod) (t2, a4 *multinetPod) {
	t := s.t
	t.Helper()
	a := s.nodes["a"]
	nic := planNetwork("nic2").dev
	holder := "nrke-" + s.cp.token + "-x"
	run(t, "ip", "netns", "add", holder)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", holder).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", holder, err, out)
		}
	})
	run(t, "ip", "-n", a.netns, "link", "set", nic, "netns", holder)
	s.createPod("a4", "a", false, podClaim{name: "nic", template: "nic2"})
	want := fmt.Sprintf("host interface %q is not on the host", nic)
	t.Logf("pod a4: event: %s", s.waitEvent("a4", "FailedCreatePodSandBox", want))
	for _, claim := range s.claims(s.pod("a4")) {
		t.Logf("pod a4: claim %s: Ready False: %s", claim.Name, s.waitClaimFailed(claim.Name, want))
	}
	s.checkNotRunning("a4", "a")

	run(t, "ip", "-n", holder, "link", "set", nic, "netns", a.netns)
	s.deletePods("t1")
	s.waitRunning("t2", retryTimeout)
	s.waitRunning("a4", retryTimeout)
	t2, a4 = s.inspect("t2"), s.inspect("a4")
	if len(t2.itfs) != 2 || len(t1.itfs) != 1 || fmt.Sprint(t2.itfs[1].addrs) != fmt.Sprint(t1.itfs[0].addrs) {
		t.Errorf("pod t2 has %v, want net2 with tiny's one address, %v, which t1 had", t2.itfs, t1.itfs)
	}
	return t2, a4
}

// removeWhileAway takes nri-podnet away from both nodes (the
// DaemonSet's nodeSelector) and deletes pod name: the kubelet stops its
// sandbox (the runtime removes its network namespace, with the pod's
// interfaces) but cannot unprepare its claims; once nri-podnet is back,
// the pod goes, and then, at the kubelet's garbage collection, its
// sandbox (nri-podnet's RemovePodSandbox).
func (s *multinetStage) removeWhileAway(name string) {
	t := s.t
	t.Helper()
	p := s.pod(name)
	var n *kubeNode
	for _, node := range s.nodes {
		if node.name == p.Spec.NodeName {
			n = node
		}
	}
	sandbox := strings.TrimSpace(n.must("pods", "-q", "--label", "io.kubernetes.pod.uid="+string(p.UID), "--state", "ready"))
	netns := n.sandboxNetnsPath(sandbox)
	s.nodes["a"].podnetAway(true)
	s.nodes["b"].waitPodnetGone()
	if err := s.cp.client.CoreV1().Pods(s.ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod "+name+"'s sandbox stopped with nri-podnet away", podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		out, errOut, err := n.crictl("pods", "-q", "--label", "io.kubernetes.pod.uid="+string(p.UID), "--state", "ready")
		if err != nil {
			return false, errOut
		}
		_, statErr := os.Stat(netns)
		return strings.TrimSpace(out) == "" && statErr != nil, fmt.Sprintf("ready sandboxes %q, network namespace %s: %v", out, netns, statErr)
	})
	if got := s.pod(name); got.DeletionTimestamp == nil {
		t.Errorf("pod %s is not being deleted", name)
	} else {
		t.Logf("pod %s: sandbox stopped, network namespace gone, the pod still in the API (its claims not unprepared)", name)
	}
	s.nodes["a"].podnetAway(false)
	for _, suffix := range []string{"a", "b"} {
		s.nodes[suffix].waitPodnetPod("")
	}
	s.waitPodsGone(name)
	// The stopped sandbox, which nri-podnet's Synchronize saw listed, goes
	// at the kubelet's garbage collection (every minute): nri-podnet's
	// RemovePodSandbox then gives back what it held.
	start := time.Now()
	waitFor(t, "the kubelet to remove pod "+name+"'s sandbox", sandboxGCTimeout, time.Second, func() (bool, string) {
		out, errOut, err := n.crictl("pods", "-q", "--id", sandbox)
		return err == nil && strings.TrimSpace(out) == "", out + errOut
	})
	t.Logf("pod %s's sandbox removed by the kubelet %v after the pod went", name, time.Since(start).Round(time.Millisecond))
}

// sandboxGCTimeout bounds how long the kubelet takes to remove the
// sandbox of a deleted pod: its container garbage collection runs every
// minute.
const sandboxGCTimeout = 2 * time.Minute

// waitNoClaims deletes the stale claim and waits until the namespace has
// no ResourceClaim left (those of templates go with their pods).
func (s *multinetStage) waitNoClaims() {
	t := s.t
	t.Helper()
	if err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Delete(t.Context(), "stale", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no ResourceClaim left in "+s.ns, podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		return len(names) == 0, fmt.Sprint(names)
	})
}
