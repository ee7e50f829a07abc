package dra_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/nrinet/nrinet/plugins/podnet/dra"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

var nets = []multinet.Network{
	{Name: "blue", Kind: multinet.KindBridge, Bridge: "br-blue", Subnets: []string{"198.18.10.0/24"}},
	{Name: "mv", Kind: multinet.KindMacvlan, Master: "eth1", Subnets: []string{"198.18.12.0/24"}},
	{Name: "nic", Kind: multinet.KindHost, Interface: "eth2"},
}

// claim is an allocated claim reserved for pods, with one device per
// (request, device) pair of this driver on pool.
func claim(name, pool string, pods []string, devs ...[2]string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, UID: types.UID("uid-" + name)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devs {
		r := resourceapi.DeviceRequestAllocationResult{Request: d[0], Driver: dra.DriverName, Pool: pool, Device: d[1]}
		if d[1] != "nic" {
			r.ShareID = ptr.To(types.UID("share-" + name + "-" + d[0]))
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, r)
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "pod-" + p, UID: types.UID(p)})
	}
	return c
}

// pod is the pod of UID uid in ns1, pod-<uid> (claim's reservedFor).
func pod(uid string) multinet.Pod {
	return multinet.Pod{Namespace: "ns1", Name: "pod-" + uid, UID: uid}
}

// newClientset is an API of client-go's fake clientset holding the claims.
func newClientset(t *testing.T, objs ...*resourceapi.ResourceClaim) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset()
	for _, o := range objs {
		if _, err := cs.ResourceV1().ResourceClaims(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

func newDriver(t *testing.T, dir string, objs ...*resourceapi.ResourceClaim) (*dra.Driver, *fake.Clientset) {
	t.Helper()
	cs := newClientset(t, objs...)
	d, err := dra.New(dra.Config{Client: cs, NodeName: "node1", StateDir: dir, Networks: nets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d, cs
}

func TestDevices(t *testing.T) {
	devs := dra.Devices(nets)
	if len(devs) != 3 {
		t.Fatalf("%d devices; want 3", len(devs))
	}
	for _, d := range devs {
		if got := *d.Attributes[dra.AttrNetwork].StringValue; got != d.Name {
			t.Errorf("device %s: network attribute %q", d.Name, got)
		}
		shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		if shared != (d.Name != "nic") {
			t.Errorf("device %s: allowMultipleAllocations %v", d.Name, shared)
		}
	}
	if got := *devs[2].Attributes[dra.AttrInterface].StringValue; got != "eth2" {
		t.Errorf("nic's interface attribute %q; want eth2", got)
	}
}

func TestDriver_PrepareResourceClaims(t *testing.T) {
	tests := []struct {
		name  string
		claim *resourceapi.ResourceClaim
		says  string // "" for success
	}{
		{name: "bridge and macvlan", claim: claim("ok", "node1", []string{"p1"}, [2]string{"a", "blue"}, [2]string{"b", "mv"})},
		{name: "unknown network", claim: claim("bad-net", "node1", []string{"p1"}, [2]string{"a", "red"}),
			says: `claim ns1/bad-net: request a: device "red": multinet: no network "red" on this node`},
		{name: "other node's pool", claim: claim("bad-pool", "node2", []string{"p1"}, [2]string{"a", "blue"}),
			says: `claim ns1/bad-pool: device blue of pool "node2" is not this node's ("node1")`},
		{name: "host interface for two pods", claim: claim("bad-share", "node1", []string{"p1", "p2"}, [2]string{"a", "nic"}),
			says: `claim ns1/bad-share: device "nic" moves host interface "eth2" into one pod, and the claim is reserved for 2`},
		{name: "not allocated", claim: &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "unalloc", UID: "uid-unalloc"}},
			says: "claim ns1/unalloc: not allocated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDriver(t, t.TempDir())
			res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{tc.claim})
			if err != nil {
				t.Fatal(err)
			}
			r := res[tc.claim.UID]
			reqs, _ := d.Requests(context.Background(), pod("p1"))
			if tc.says != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.says) {
					t.Errorf("error %v; want one saying %q", r.Err, tc.says)
				}
				if len(reqs) != 0 {
					t.Errorf("a refused claim gives pod p1 %v", reqs)
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if len(r.Devices) != 2 || r.Devices[0].DeviceName != "blue" || r.Devices[1].PoolName != "node1" || r.Devices[0].ShareID == nil {
				t.Errorf("devices %+v", r.Devices)
			}
			if len(reqs) != 2 || reqs[0].Network != "blue" || reqs[1].Network != "mv" || reqs[0].Claim != "ns1/ok" {
				t.Errorf("Requests(p1) = %+v; want blue then mv of ns1/ok", reqs)
			}
		})
	}
}

// Prepared claims outlive the driver; unprepare forgets them.
func TestDriver_restart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d, _ := newDriver(t, dir)
	c1, c2 := claim("z-second", "node1", []string{"p1"}, [2]string{"a", "nic"}), claim("a-first", "node1", []string{"p1"}, [2]string{"a", "blue"})
	if _, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c1, c2}); err != nil {
		t.Fatal(err)
	}
	d2, _ := newDriver(t, dir)
	reqs, _ := d2.Requests(ctx, pod("p1"))
	if got := []string{reqs[0].Claim, reqs[1].Claim}; !slices.Equal(got, []string{"ns1/a-first", "ns1/z-second"}) {
		t.Errorf("restarted driver: Requests(p1) claims %v; want them by name", got)
	}
	res, err := d2.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c1.UID}, {UID: c2.UID}, {UID: "never"}})
	if err != nil || res[c1.UID] != nil || res["never"] != nil {
		t.Fatalf("unprepare: %v, %v", res, err)
	}
	d3, _ := newDriver(t, dir)
	if reqs, _ := d3.Requests(ctx, pod("p1")); len(reqs) != 0 {
		t.Errorf("after unprepare and a restart: %v", reqs)
	}
}

// Attached writes status.devices[] with networkData and Ready; a failure
// writes Ready False with the error; Detached removes the entries.
func TestDriver_status(t *testing.T) {
	ctx := context.Background()
	c := claim("st", "node1", []string{"p1"}, [2]string{"a", "blue"}, [2]string{"b", "nic"})
	d, cs := newDriver(t, t.TempDir(), c)
	if _, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); err != nil {
		t.Fatal(err)
	}
	reqs, _ := d.Requests(ctx, pod("p1"))
	itfs := []multinet.Interface{
		{Claim: reqs[0].Claim, Ref: reqs[0].Ref, Network: "blue", Name: "net1", MAC: "02:00:00:00:00:01", Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.10.2/24")}},
		{Claim: reqs[1].Claim, Ref: reqs[1].Ref, Network: "nic", Name: "net2", MAC: "02:00:00:00:00:02"},
	}
	status := func() []resourceapi.AllocatedDeviceStatus {
		d.WaitStatus()
		got, err := cs.ResourceV1().ResourceClaims("ns1").Get(ctx, "st", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Devices
	}
	d.Attached(ctx, "p1", reqs, itfs, nil)
	devs := status()
	if len(devs) != 2 {
		t.Fatalf("status.devices %+v; want 2", devs)
	}
	blue := devs[slices.IndexFunc(devs, func(s resourceapi.AllocatedDeviceStatus) bool { return s.Device == "blue" })]
	if blue.Driver != dra.DriverName || blue.Pool != "node1" || blue.ShareID == nil || *blue.ShareID != "share-st-a" {
		t.Errorf("blue's entry %+v", blue)
	}
	if nd := blue.NetworkData; nd == nil || nd.InterfaceName != "net1" || nd.HardwareAddress != "02:00:00:00:00:01" || !slices.Equal(nd.IPs, []string{"198.18.10.2/24"}) {
		t.Errorf("blue's networkData %+v", blue.NetworkData)
	}
	if len(blue.Conditions) != 1 || blue.Conditions[0].Type != "Ready" || blue.Conditions[0].Status != metav1.ConditionTrue || blue.Conditions[0].Reason != dra.ReasonAttached {
		t.Errorf("blue's conditions %+v", blue.Conditions)
	}

	d.Detached(ctx, "p1", itfs)
	if devs := status(); len(devs) != 0 {
		t.Errorf("after Detached: %+v", devs)
	}

	attachErr := &multinet.RequestError{Claim: "ns1/st", IfName: "net2", Err: &multinet.HostInterfaceTakenError{Network: "nic", Interface: "eth2", Owner: "sandbox-x"}}
	d.Attached(ctx, "p1", reqs, nil, attachErr)
	devs = status()
	if len(devs) != 2 {
		t.Fatalf("status.devices after a failure %+v; want 2", devs)
	}
	for _, s := range devs {
		c := s.Conditions
		if len(c) != 1 || c[0].Status != metav1.ConditionFalse || c[0].Reason != dra.ReasonAttachFailed || !strings.Contains(c[0].Message, `host interface "eth2" is taken by sandbox-x`) {
			t.Errorf("device %s conditions %+v", s.Device, c)
		}
		if s.NetworkData != nil {
			t.Errorf("device %s: networkData %+v after a failure", s.Device, s.NetworkData)
		}
	}
	if !errors.Is(attachErr, multinet.ErrHostInterfaceTaken) {
		t.Error("the error does not match")
	}
}

// A pod that joins a claim prepared before (the kubelet prepares a claim
// once per node) gets its devices: the driver reads the pod's claims from
// the API server. A pod the claim is not reserved for, and a pod of
// another namespace, do not; a host interface claim refuses a second pod;
// an API server that cannot be read fails the start.
func TestDriver_Requests_sharedClaim(t *testing.T) {
	ctx := context.Background()
	shared := claim("shared", "node1", []string{"p1"}, [2]string{"a", "blue"})
	host := claim("host", "node1", []string{"p1"}, [2]string{"a", "nic"})
	dir := t.TempDir()
	d, cs := newDriver(t, dir, shared, host)
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{shared, host})
	if err != nil || res[shared.UID].Err != nil || res[host.UID].Err != nil {
		t.Fatal(err, res)
	}
	// The scheduler reserves the claims for p2 too; the kubelet does not
	// prepare them again.
	newPod := func(uid string, claims ...string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "pod-" + uid, UID: types.UID(uid)}}
		for _, c := range claims {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
		}
		if _, err := cs.CoreV1().Pods("ns1").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(c *resourceapi.ResourceClaim, uid string) {
		t.Helper()
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "pod-" + uid, UID: types.UID(uid)})
		if _, err := cs.ResourceV1().ResourceClaims("ns1").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newPod("p2", "shared")
	reserve(shared, "p2")
	newPod("p3", "shared") // names the claim, not reserved for it
	reqs, err := d.Requests(ctx, pod("p2"))
	if err != nil || len(reqs) != 1 || reqs[0].Claim != "ns1/shared" || reqs[0].Network != "blue" {
		t.Fatalf("Requests(p2) = %+v, %v; want blue of ns1/shared", reqs, err)
	}
	if reqs, err := d.Requests(ctx, pod("p3")); err != nil || len(reqs) != 0 {
		t.Errorf("Requests(p3), a pod the claim is not reserved for = %+v, %v; want none", reqs, err)
	}
	other := multinet.Pod{Namespace: "ns2", Name: "pod-p2", UID: "p2x"}
	if reqs, err := d.Requests(ctx, other); err != nil || len(reqs) != 0 {
		t.Errorf("Requests of a pod of ns2 = %+v, %v; want none", reqs, err)
	}

	// The host interface's claim: a second pod is refused, by name.
	newPod("p4", "host")
	reserve(host, "p4")
	_, err = d.Requests(ctx, pod("p4"))
	if want := `claim ns1/host: device "nic" moves host interface "eth2" into one pod, which it is in already; pod ns1/pod-p4 joins it`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Requests(p4) error %v; want one saying %q", err, want)
	}

	// A restarted driver knows p2 joined.
	d2, err := dra.New(dra.Config{Client: fake.NewClientset(), NodeName: "node1", StateDir: dir, Networks: nets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d2.Stop)
	// (Its API server knows no pod: p2's claim comes from the store.)
	if reqs, err := d2.Requests(ctx, pod("p2")); err != nil || len(reqs) != 1 || reqs[0].Network != "blue" {
		t.Errorf("restarted driver: Requests(p2) = %+v, %v; want blue", reqs, err)
	}

	// The API server failing: the pod's start fails, naming it.
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	newPod("p5", "shared")
	if _, err := d.Requests(ctx, pod("p5")); err == nil || !strings.Contains(err.Error(), "pod ns1/pod-p5: reading its resource claims: connection refused") {
		t.Errorf("Requests(p5) with the API server failing: %v", err)
	}
}
