package kubee2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nrinet/nrinet/internal/testutil"
)

// Deadlines of the multi-network stage.
const (
	// claimStatusTimeout bounds how long the driver takes to write a
	// claim's status after its pod's sandbox started (or failed): the
	// write runs in the background.
	claimStatusTimeout = 30 * time.Second
	// retryTimeout bounds how long the kubelet takes to try a pod's
	// sandbox again after a failure (it requeues the pod after 10 to 15
	// s) and to report a failure (an event).
	retryTimeout = 60 * time.Second
)

// infoSecondary is the info key of nri-podnet's network result that
// names each secondary interface's network (plugins/podnet.InfoSecondary).
const infoSecondary = "podnet.nrinet.io/secondary"

// A multinetStage is the multi-network stage's cluster: the control
// plane, the nodes by suffix, the second segment, and the namespace of
// its pods.
type multinetStage struct {
	t     *testing.T
	cp    *controlPlane
	nodes map[string]*kubeNode
	sec   *secondaryUnderlay
	ns    string
	// nicMAC is node a's eth2's MAC (network nic2).
	nicMAC string
}

// A podClaim is one entry of a pod's resourceClaims: from a template, or
// an existing claim.
type podClaim struct{ name, template, claim string }

// createPod creates pod name on the node of suffix (nodeSelector on its
// host name label; the scheduler allocates the claims), a busybox
// sleeping, with the claims.
func (s *multinetStage) createPod(name, suffix string, hostNetwork bool, claims ...podClaim) {
	t := s.t
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: map[string]string{"app": "multinet"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": s.nodes[suffix].name},
			HostNetwork:  hostNetwork,
			Containers: []corev1.Container{{
				Name: "busybox", Image: busyboxRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
		},
	}
	for _, c := range claims {
		pc := corev1.PodResourceClaim{Name: c.name}
		if c.template != "" {
			pc.ResourceClaimTemplateName = ptr.To(c.template)
		} else {
			pc.ResourceClaimName = ptr.To(c.claim)
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
	}
	if _, err := s.cp.client.CoreV1().Pods(s.ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// deletePods deletes the pods and waits until they are gone from the
// API (the kubelet has stopped their sandboxes and unprepared their
// claims).
func (s *multinetStage) deletePods(names ...string) {
	t := s.t
	t.Helper()
	for _, name := range names {
		if err := s.cp.client.CoreV1().Pods(s.ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting pod %s: %v", name, err)
		}
	}
	s.waitPodsGone(names...)
}

// waitPodsGone waits until the pods are gone from the API.
func (s *multinetStage) waitPodsGone(names ...string) {
	t := s.t
	t.Helper()
	waitFor(t, fmt.Sprintf("pods %v gone", names), podsGoneTimeout, 250*time.Millisecond, func() (bool, string) {
		for _, name := range names {
			_, err := s.cp.client.CoreV1().Pods(s.ns).Get(t.Context(), name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("pod %s: %v", name, err)
			}
		}
		return true, ""
	})
}

// pod gets pod name.
func (s *multinetStage) pod(name string) *corev1.Pod {
	t := s.t
	t.Helper()
	p, err := s.cp.client.CoreV1().Pods(s.ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return p
}

// waitRunning waits until pod name is Running.
func (s *multinetStage) waitRunning(name string, patience time.Duration) *corev1.Pod {
	t := s.t
	t.Helper()
	var p *corev1.Pod
	waitFor(t, "pod "+name+" Running", patience, 250*time.Millisecond, func() (bool, string) {
		got, err := s.cp.client.CoreV1().Pods(s.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p = got
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("%s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
	return p
}

// claims returns the pod's ResourceClaims, by name: the order in which
// nri-podnet names their interfaces (net1, net2, ...).
func (s *multinetStage) claims(p *corev1.Pod) []*resourcev1.ResourceClaim {
	t := s.t
	t.Helper()
	var names []string
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			names = append(names, *pc.ResourceClaimName)
			continue
		}
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.Name == pc.Name && st.ResourceClaimName != nil {
				names = append(names, *st.ResourceClaimName)
			}
		}
	}
	slices.Sort(names)
	var out []*resourcev1.ResourceClaim
	for _, name := range names {
		c, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: claim %s: %v", p.Name, name, err)
		}
		out = append(out, c)
	}
	return out
}

// A multinetPod is a Running pod of the stage as its node sees it.
type multinetPod struct {
	name, suffix, uid string
	// sandboxID is its ready sandbox; netns its network namespace's name
	// (under /run/netns).
	sandboxID, netns string
	// ips are eth0's addresses (status.podIPs).
	ips  []netip.Addr
	itfs []podInterface
}

// A podInterface is a secondary interface of a pod.
type podInterface struct {
	// name is net1, net2, ...; network the device, claim the
	// ResourceClaim's name.
	name, network, claim, mac string
	addrs                     []netip.Prefix
	// result is the claim's allocation of the device.
	result resourcev1.DeviceRequestAllocationResult
}

// addr returns the interface's address of a's family.
func (i podInterface) addr(v4 bool) netip.Addr {
	for _, a := range i.addrs {
		if a.Addr().Is4() == v4 {
			return a.Addr()
		}
	}
	return netip.Addr{}
}

// inspect checks a Running pod on the node of suffix and returns it:
//   - its primary network as before: status.podIPs one IPv4 and one IPv6
//     address of the Node's pod CIDRs, the same on eth0 and first in
//     CRI's addresses (the secondary interfaces' follow);
//   - one interface netN per device of nri-podnet's driver in its claims
//     (by claim name, then allocation order), up, with the network's
//     addresses (one per subnet) from the node's part of it, and no
//     other netN; a host network's interface has the host interface's
//     MAC;
//   - the pod's NRI network record (crictl inspectp) lists each with its
//     MAC and addresses, and the info key names their networks;
//   - each claim's status.devices[] entry of each device has networkData
//     {interfaceName, hardwareAddress, ips} equal to the interface's, and
//     Ready True (InterfaceAttached).
func (s *multinetStage) inspect(name string) *multinetPod {
	t := s.t
	t.Helper()
	p := s.pod(name)
	suffix := ""
	for k, n := range s.nodes {
		if n.name == p.Spec.NodeName {
			suffix = k
		}
	}
	n := s.nodes[suffix]
	if n == nil {
		t.Fatalf("pod %s runs on %q, not a node of the stage", name, p.Spec.NodeName)
	}
	mp := &multinetPod{name: name, suffix: suffix, uid: string(p.UID)}
	mp.sandboxID = strings.TrimSpace(n.must("pods", "-q", "--label", "io.kubernetes.pod.uid="+mp.uid, "--state", "ready"))
	if mp.sandboxID == "" || strings.Contains(mp.sandboxID, "\n") {
		t.Fatalf("pod %s: want one ready sandbox, CRI lists %q", name, mp.sandboxID)
	}
	mp.netns = filepath.Base(n.sandboxNetnsPath(mp.sandboxID))

	// The primary network, as every stage checks it.
	for _, ip := range p.Status.PodIPs {
		mp.ips = append(mp.ips, netip.MustParseAddr(ip.IP))
	}
	if len(mp.ips) != 2 || !n.podCIDRs[0].Contains(mp.ips[0]) || !n.podCIDRs[1].Contains(mp.ips[1]) {
		t.Errorf("pod %s: status.podIPs %v, want an address of each of %v", name, mp.ips, n.podCIDRs)
	}
	insp, err := testutil.ParsePodStatus([]byte(n.must("inspectp", "-o", "json", mp.sandboxID)))
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	if got := eth0Addrs(t, mp.netns); !slices.Equal(got, mp.ips) {
		t.Errorf("pod %s: eth0 has %v, the API says %v", name, got, mp.ips)
	}

	// The secondary interfaces, in the pod.
	var names []string
	for _, c := range s.claims(p) {
		for _, r := range driverResults(c) {
			itf := podInterface{name: "net" + strconv.Itoa(len(mp.itfs)+1), network: r.Device, claim: c.Name, result: r}
			itf.mac, itf.addrs = podLink(t, mp.netns, itf.name)
			plan := planNetwork(r.Device)
			if len(itf.addrs) != len(plan.subnets) {
				t.Errorf("pod %s: %s (network %s) has addresses %v, want one of each of %v", name, itf.name, itf.network, itf.addrs, plan.subnets)
			}
			for _, a := range itf.addrs {
				i := slices.IndexFunc(plan.subnets, func(s netip.Prefix) bool { return s.Contains(a.Addr()) })
				if i < 0 || a.Bits() != plan.subnets[i].Bits() || !plan.own[suffix][i].Contains(a.Addr()) {
					t.Errorf("pod %s: %s (network %s) has address %s, want one of node %s's part %v of %v", name, itf.name, itf.network, a, n.name, plan.own[suffix], plan.subnets)
				}
			}
			if plan.kind == "host" && itf.mac != s.nicMAC {
				t.Errorf("pod %s: %s (network %s, host interface %s) has MAC %s, want %s's, %s", name, itf.name, itf.network, plan.dev, itf.mac, plan.dev, s.nicMAC)
			}
			mp.itfs = append(mp.itfs, itf)
			names = append(names, itf.name+"="+itf.network)
		}
	}
	if out, err := ipIn(mp.netns, "link", "show", "dev", "net"+strconv.Itoa(len(mp.itfs)+1)); err == nil {
		t.Errorf("pod %s: an interface beyond its %d devices:\n%s", name, len(mp.itfs), out)
	}

	// CRI's addresses: eth0's (the API's), then those of the secondary
	// interfaces, as the network contract merges them (the addresses of a
	// plugin's interfaces are its addresses); the kubelet keeps the first
	// of each family.
	var criIPs []string
	for _, a := range mp.ips {
		criIPs = append(criIPs, a.String())
	}
	for _, itf := range mp.itfs {
		for _, a := range itf.addrs {
			criIPs = append(criIPs, a.Addr().String())
		}
	}
	if got := insp.IPs(); !slices.Equal(got, criIPs) {
		t.Errorf("pod %s: crictl inspectp reports %v, want eth0's (the API's) and then its secondary interfaces' addresses, %v", name, got, criIPs)
	}

	// The runtime's record of the pod's network.
	rec, ok, err := insp.Record()
	if err != nil || !ok {
		t.Fatalf("pod %s: no NRI network record in crictl inspectp (%v)", name, err)
	}
	for _, itf := range mp.itfs {
		i := slices.IndexFunc(rec.Network.Interfaces, func(r testutil.NRIInterface) bool { return r.Name == itf.name })
		if i < 0 {
			t.Errorf("pod %s: the NRI record has no %s: %+v", name, itf.name, rec.Network.Interfaces)
			continue
		}
		r := rec.Network.Interfaces[i]
		if r.MAC != itf.mac || !sameAddrs(r.Addresses, itf.addrs) {
			t.Errorf("pod %s: the NRI record has %s %s %v, the pod %s %v", name, itf.name, r.MAC, r.Addresses, itf.mac, itf.addrs)
		}
	}
	if got, want := rec.Network.Info[infoSecondary], strings.Join(names, ","); got != want {
		t.Errorf("pod %s: the NRI record's info %s is %q, want %q", name, infoSecondary, got, want)
	}
	s.waitClaimsAttached(mp)
	t.Logf("pod %s on %s: sandbox %.12s, eth0 %v, %v", name, n.name, mp.sandboxID, mp.ips, mp.itfs)
	return mp
}

// String shows an interface in the test's log.
func (i podInterface) String() string {
	return fmt.Sprintf("%s=%s(%s %v)", i.name, i.network, i.mac, i.addrs)
}

// sameAddrs reports whether strs (CIDRs) are addrs, in any order.
func sameAddrs(strs []string, addrs []netip.Prefix) bool {
	if len(strs) != len(addrs) {
		return false
	}
	for _, a := range addrs {
		if !slices.Contains(strs, a.String()) {
			return false
		}
	}
	return true
}

// podLink returns interface name's MAC and global addresses in the
// namespace netns, failing the test unless it is there and up.
func podLink(t testing.TB, netns, name string) (string, []netip.Prefix) {
	t.Helper()
	out, err := ipIn(netns, "-j", "addr", "show", "dev", name)
	var links []struct {
		Address  string   `json:"address"`
		Flags    []string `json:"flags"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
		} `json:"addr_info"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &links)
	}
	if err != nil || len(links) != 1 {
		t.Fatalf("%s in %s: %v\n%s", name, netns, err, out)
	}
	if !slices.Contains(links[0].Flags, "UP") {
		t.Errorf("%s in %s is not up: flags %v", name, netns, links[0].Flags)
	}
	var addrs []netip.Prefix
	for _, a := range links[0].AddrInfo {
		if a.Scope == "global" {
			addrs = append(addrs, netip.PrefixFrom(netip.MustParseAddr(a.Local), a.PrefixLen))
		}
	}
	return links[0].Address, addrs
}

// ipIn runs ip -n netns args... and returns its combined output.
func ipIn(netns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", netns}, args...)...).CombinedOutput()
	return string(out), err
}

// checkNotRunning fails the test if pod name runs, or has a ready
// sandbox on the node of suffix.
func (s *multinetStage) checkNotRunning(name, suffix string) {
	t := s.t
	t.Helper()
	p := s.pod(name)
	if p.Status.Phase == corev1.PodRunning {
		t.Errorf("pod %s runs", name)
	}
	if out := strings.TrimSpace(s.nodes[suffix].must("pods", "-q", "--label", "io.kubernetes.pod.uid="+string(p.UID), "--state", "ready")); out != "" {
		t.Errorf("pod %s has a ready sandbox %s", name, out)
	}
}

// pingOver pings, from pod from, each address of to's interface ifName
// (eth0: its pod IPs), each ping a subtest what/<from>-<family>-<to>.
func (s *multinetStage) pingOver(what string, from, to *multinetPod, ifName string) {
	var addrs []netip.Addr
	if ifName == "eth0" {
		addrs = to.ips
	} else {
		for _, itf := range to.itfs {
			if itf.name == ifName {
				for _, a := range itf.addrs {
					addrs = append(addrs, a.Addr())
				}
			}
		}
	}
	if len(addrs) == 0 {
		s.t.Errorf("%s: pod %s has no addresses on %s", what, to.name, ifName)
	}
	s.pingAddrs(what, from, to.name+"-"+ifName, addrs)
}

// pingAddrs pings, from pod from, each of addrs, each ping a subtest
// what/<from>-<family>-<to>.
func (s *multinetStage) pingAddrs(what string, from *multinetPod, to string, addrs []netip.Addr) {
	for _, a := range addrs {
		s.t.Run(fmt.Sprintf("%s/%s-%s-%s", what, from.name, familyOf(a), to), func(t *testing.T) {
			if err := ping(from.netns, a); err != nil {
				t.Error(err)
			}
		})
	}
}
