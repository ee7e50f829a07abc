package netpol_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// Compile a policy that lets only the pods labelled app=web reach the
// database pod of this node.
func ExampleCompile() {
	pods := []netpol.Pod{
		{Namespace: "prod", Name: "db", Labels: map[string]string{"app": "db"}, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}, Local: true},
		{Namespace: "prod", Name: "web", Labels: map[string]string{"app": "web"}, IPs: []netip.Addr{netip.MustParseAddr("198.18.4.7")}},
	}
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db-from-web"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
			}},
		},
	}
	p, err := netpol.Compile([]*networkingv1.NetworkPolicy{policy}, nil, pods)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, pr := range p.Pods {
		fmt.Println(pr.Pod, "isolated for ingress:", pr.Ingress != nil, "egress:", pr.Egress != nil)
		for _, r := range pr.Ingress.Rules {
			fmt.Println("  allowed by", r.Policy, "from", r.Peers.Ranges())
		}
	}
	// Output:
	// prod/db isolated for ingress: true egress: false
	//   allowed by prod/db-from-web from [198.18.4.7-198.18.4.7]
}

// An Enforcer that logs denied packets, at most 10 a second for the
// node, to nflog group 100, and the DenyLog that writes them; its
// counters, read from the kernel (as nri-podnet's /metrics does at each
// scrape). Needs CAP_NET_ADMIN: it touches the process's own network
// namespace, so it is not run.
func ExampleEnforcer_OpenDenyLog() {
	e, err := netpol.New(netpol.WithLogDenied(netpol.LogDenied{Group: 100, Rate: 10, Per: time.Second}))
	if err != nil {
		fmt.Println(err)
		return
	}
	dl, err := e.OpenDenyLog(slog.Default())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dl.Close()
	// ... e.Sync(program) on every change ...
	c, err := e.Counters()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range c.Denied {
		fmt.Println(d.Pod, d.Direction, d.Packets)
	}
	fmt.Println("logged", c.Logged, "over the rate", c.Unlogged)
}
