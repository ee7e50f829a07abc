package netpol_test

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// TestCache: a program compiled through a Cache is the one Compile
// makes, compile after compile, as the policies change; the Cache holds
// the ipBlocks the last compile met and no others; an ipBlock it cannot
// read is an error every time.
func TestCache(t *testing.T) {
	block := func(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
	}
	in := func(peers ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyIngressRule {
		return []networkingv1.NetworkPolicyIngressRule{{From: peers}}
	}
	web := map[string]string{"app": "web"}
	blocks := policy("prod", "blocks", web, nil, in(block("198.18.64.0/18", "198.18.64.0/24", "198.18.65.7/32"), block("fd00:198:18::/56", "fd00:198:18::/64")), nil)
	mixed := policy("prod", "mixed", web, nil, in(block("198.18.128.0/17", "198.18.200.0/24"),
		networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}), nil)
	same := policy("dev", "same-block", nil, nil, in(block("198.18.128.0/17", "198.18.200.0/24")), nil)
	bad := policy("prod", "bad", web, nil, in(block("198.18.64.0/18", "not-a-cidr")), nil)

	cache := netpol.NewCache()
	for i, step := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		blocks   int // the ipBlocks the cache holds after
	}{
		{"two policies, three blocks", []*networkingv1.NetworkPolicy{blocks, mixed}, 3},
		{"the same again, from the cache", []*networkingv1.NetworkPolicy{blocks, mixed}, 3},
		{"a block shared by a new policy", []*networkingv1.NetworkPolicy{blocks, mixed, same}, 3},
		{"a policy gone: its blocks leave", []*networkingv1.NetworkPolicy{mixed, same}, 1},
		{"an unreadable except: not kept", []*networkingv1.NetworkPolicy{mixed, bad}, 1},
		{"none", nil, 0},
		{"back again, built anew", []*networkingv1.NetworkPolicy{blocks, mixed}, 3},
	} {
		want, wantErr := netpol.Compile(step.policies, testNamespaces, testPods)
		got, err := cache.CompileMax(step.policies, testNamespaces, testPods, netpol.DefaultMaxPolicyElements)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("step %d (%s): error %v, Compile's %v", i, step.name, err, wantErr)
		}
		if g, w := summary(got), summary(want); !slices.Equal(g, w) {
			t.Errorf("step %d (%s): program\n%s\nwant Compile's\n%s", i, step.name, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		if n := cache.Len(); n != step.blocks {
			t.Errorf("step %d (%s): the cache holds %d ipBlocks, want %d", i, step.name, n, step.blocks)
		}
	}
}
