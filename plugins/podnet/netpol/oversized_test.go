package netpol_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// pathological is the review's policy: an ipBlock (198.18.0.0/15) with
// excepts scattered /32s (no two adjacent), selecting every pod of
// namespace prod; and the local pods it selects.
func pathological(excepts, localPods int) ([]*networkingv1.NetworkPolicy, []netpol.Pod) {
	block := &networkingv1.IPBlock{CIDR: "198.18.0.0/15"}
	for i := range excepts {
		a := netip.AddrFrom4([4]byte{198, 18 + byte(i>>15), byte(i >> 7), byte(i<<1) | 1})
		block.Except = append(block.Except, a.String()+"/32")
	}
	pol := policy("prod", "huge", nil, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: block}}}}, nil)
	var pods []netpol.Pod
	for i := range localPods {
		pods = append(pods, netpol.Pod{Namespace: "prod", Name: fmt.Sprint("p", i), Local: true,
			IPs: []netip.Addr{netip.AddrFrom4([4]byte{198, 19, 200, byte(i + 1)})}})
	}
	return []*networkingv1.NetworkPolicy{pol}, pods
}

// TestCompile_Oversized: a policy past the bound allows nothing, keeps
// its pods isolated, and is named in the error and in the program.
func TestCompile_Oversized(t *testing.T) {
	pols, pods := pathological(20000, 50)
	p, err := netpol.Compile(pols, nil, pods)
	var o *netpol.OversizedError
	var pe *netpol.PolicyError
	if !errors.As(err, &o) || !errors.As(err, &pe) || pe.Policy != "prod/huge" || o.Max != netpol.DefaultMaxPolicyElements {
		t.Fatalf("Compile = %v, want an OversizedError for prod/huge", err)
	}
	if !strings.Contains(err.Error(), "prod/huge") || !strings.Contains(err.Error(), "allows nothing") {
		t.Errorf("error %q does not name the policy and what it means", err)
	}
	if len(p.Oversized) != 1 || p.Oversized[0].Policy != "prod/huge" || p.Oversized[0].Elements <= netpol.DefaultMaxPolicyElements {
		t.Errorf("Oversized = %+v", p.Oversized)
	}
	if len(p.Pods) != 50 {
		t.Fatalf("%d pods isolated, want 50", len(p.Pods))
	}
	for _, pr := range p.Pods {
		if pr.Ingress == nil || len(pr.Ingress.Rules) != 0 {
			t.Errorf("pod %s: ingress %+v, want isolated with no rule", pr.Pod, pr.Ingress)
		}
	}
	// Below the bound the same policy is enforced.
	pols, pods = pathological(10000, 50)
	if p, err = netpol.Compile(pols, nil, pods); err != nil || len(p.Oversized) != 0 || len(p.Pods[0].Ingress.Rules) != 1 {
		t.Errorf("10,000 excepts: %v, oversized %+v", err, p.Oversized)
	}
	if p, err = netpol.CompileMax(pols, nil, pods, 1000); len(p.Oversized) != 1 {
		t.Errorf("CompileMax 1000: %v, oversized %+v", err, p.Oversized)
	}
}

// TestEnforcer_SharedPeers: the peers of a policy's rule are one set,
// however many pods it selects: 50 pods selected by the 10,000-except
// policy write its 20,000 elements once, not 50 times.
func TestEnforcer_SharedPeers(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	f, err := os.Open(testutil.NewNetNS(t, "nrns"+randHex(4)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	pols, pods := pathological(10000, 50)
	p, err := netpol.Compile(pols, nil, pods)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Sync(p)
	if err != nil {
		t.Fatal(err)
	}
	// The peer set (10,001 ranges: start and end each), and the verdict
	// map's 50 elements.
	if want := 2*10001 + 50; st.Elements > want {
		t.Errorf("the table holds %d elements, want at most %d: the peers written once", st.Elements, want)
	}
	// A pod more: its chain, not the peers again.
	pods = append(pods, netpol.Pod{Namespace: "prod", Name: "late", Local: true, IPs: []netip.Addr{netip.MustParseAddr("198.19.201.1")}})
	if p, err = netpol.Compile(pols, nil, pods); err != nil {
		t.Fatal(err)
	}
	if st, err = e.Sync(p); err != nil || st.Full || st.Written > 10 {
		t.Errorf("a pod more: %v, %+v; want a change of a few objects", err, st)
	}
}
