package netpol_test

import (
	"net/netip"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

func TestProgram_Explain(t *testing.T) {
	a, b, ext := netip.MustParseAddr("198.18.90.2"), netip.MustParseAddr("198.18.90.3"), netip.MustParseAddr("198.19.90.9")
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: []netip.Addr{a}, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: []netip.Addr{b}, Local: true},
	}
	deny := policy("prod", "deny", nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, nil, nil)
	fromA := policy("prod", "b-from-a", map[string]string{"app": "b"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}, Ports: []networkingv1.NetworkPolicyPort{tcpPort(8080)}}}, nil)
	bOut := policy("prod", "b-out", map[string]string{"app": "b"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, nil)
	pols, _ := pathological(20000, 0)
	bigOnB := pols[0].DeepCopy()
	bigOnB.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}}
	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		flow     netpol.Flow
		allowed  bool
		says     []string
	}{
		{"no policy", nil, netpol.Flow{Src: a, Dst: b, Protocol: netpol.TCP, Port: 80}, true,
			[]string{"allowed: egress of 198.18.90.2 not isolated", "ingress of 198.18.90.3 not isolated"}},
		{"default deny", []*networkingv1.NetworkPolicy{deny}, netpol.Flow{Src: a, Dst: b, Protocol: netpol.TCP, Port: 8080}, false,
			[]string{"denied:", "ingress of prod/b: no policy allows it (isolated by prod/deny)"}},
		{"allowed by one of two", []*networkingv1.NetworkPolicy{deny, fromA}, netpol.Flow{Src: a, Dst: b, Protocol: netpol.TCP, Port: 8080}, true,
			[]string{"ingress of prod/b allowed by prod/b-from-a"}},
		{"wrong port", []*networkingv1.NetworkPolicy{deny, fromA}, netpol.Flow{Src: a, Dst: b, Protocol: netpol.TCP, Port: 9090}, false,
			[]string{"isolated by prod/b-from-a, prod/deny"}},
		{"wrong protocol", []*networkingv1.NetworkPolicy{fromA}, netpol.Flow{Src: a, Dst: b, Protocol: netpol.UDP, Port: 8080}, false, nil},
		{"from outside", []*networkingv1.NetworkPolicy{fromA}, netpol.Flow{Src: ext, Dst: b, Protocol: netpol.TCP, Port: 8080}, false, nil},
		{"itself", []*networkingv1.NetworkPolicy{deny}, netpol.Flow{Src: b, Dst: b, Protocol: netpol.TCP, Port: 1}, true,
			[]string{"ingress of prod/b allowed (the pod itself)"}},
		// An egress policy does not isolate b's ingress: not named there.
		{"other direction's policy", []*networkingv1.NetworkPolicy{deny, bOut}, netpol.Flow{Src: a, Dst: b, Protocol: netpol.TCP, Port: 8080}, false,
			[]string{"ingress of prod/b: no policy allows it (isolated by prod/deny)"}},
		{"other direction's policy, egress", []*networkingv1.NetworkPolicy{deny, bOut}, netpol.Flow{Src: b, Dst: ext, Protocol: netpol.TCP, Port: 80}, false,
			[]string{"egress of prod/b: no policy allows it (isolated by prod/b-out)"}},
		{"oversized", []*networkingv1.NetworkPolicy{bigOnB}, netpol.Flow{Src: ext, Dst: b, Protocol: netpol.TCP, Port: 80}, false,
			[]string{"too big to enforce, allowing nothing: prod/huge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := netpol.Compile(tc.policies, nil, pods)
			e := p.Explain(tc.flow)
			if e.Allowed() != tc.allowed {
				t.Errorf("Explain(%s) = %s, want allowed %v", tc.flow, e, tc.allowed)
			}
			for _, s := range tc.says {
				if !strings.Contains(e.String(), s) {
					t.Errorf("Explain(%s) = %q, which does not say %q", tc.flow, e, s)
				}
			}
		})
	}
}
