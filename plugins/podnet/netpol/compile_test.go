package netpol_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// summary renders a program as one line per pod and direction.
func summary(p *netpol.Program) []string {
	var out []string
	for _, pr := range p.Pods {
		for _, d := range []struct {
			name string
			dir  *netpol.Direction
		}{{"in", pr.Ingress}, {"eg", pr.Egress}} {
			if d.dir == nil {
				continue
			}
			var rules []string
			for _, r := range d.dir.Rules {
				peers := "any"
				if r.Peers != nil {
					var rs []string
					for _, x := range r.Peers.Ranges() {
						if x.From() == x.To() {
							rs = append(rs, x.From().String())
						} else {
							rs = append(rs, x.String())
						}
					}
					peers = strings.Join(rs, ",")
				}
				var ports []string
				for _, pr := range r.Ports {
					ports = append(ports, pr.String())
				}
				rules = append(rules, peers+" "+strings.Join(ports, ","))
			}
			out = append(out, fmt.Sprintf("%s %s [%s]", pr.Pod, d.name, strings.Join(rules, "; ")))
		}
	}
	return out
}

func ips(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var (
	testNamespaces = []netpol.Namespace{{Name: "prod", Labels: map[string]string{"team": "prod"}}, {Name: "dev", Labels: map[string]string{"team": "dev"}}}
	testPods       = []netpol.Pod{
		{Namespace: "prod", Name: "web", Labels: map[string]string{"app": "web"}, IPs: ips("198.18.0.2", "fd00:198:18::2"), Local: true,
			Ports: []netpol.NamedPort{{Name: "http", Protocol: netpol.TCP, Port: 8080}}},
		{Namespace: "prod", Name: "db", Labels: map[string]string{"app": "db"}, IPs: ips("198.18.0.3"), Local: true,
			Ports: []netpol.NamedPort{{Name: "sql", Protocol: netpol.TCP, Port: 5432}}},
		{Namespace: "dev", Name: "tool", Labels: map[string]string{"app": "web"}, IPs: ips("198.18.1.9")},
		{Namespace: "dev", Name: "db2", Labels: map[string]string{"app": "db"}, IPs: ips("198.18.1.10"),
			Ports: []netpol.NamedPort{{Name: "sql", Protocol: netpol.TCP, Port: 15432}}},
		{Namespace: "prod", Name: "pending", Labels: map[string]string{"app": "web"}, Local: true}, // no address yet
	}
)

func TestCompile(t *testing.T) {
	udp := corev1.ProtocolUDP
	http, sql, nosuch := intstr.FromString("http"), intstr.FromString("sql"), intstr.FromString("nosuch")
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		want     []string
	}{
		{"no policy isolates nothing", nil, nil},
		{"no policyTypes: ingress only, even with no rule", []*networkingv1.NetworkPolicy{policy("prod", "p", nil, nil, nil, nil)},
			[]string{"prod/db in []", "prod/web in []"}},
		{"no policyTypes with egress rules: both", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "web"}, nil, nil,
			[]networkingv1.NetworkPolicyEgressRule{{}})},
			[]string{"prod/web in []", "prod/web eg [any ]"}},
		{"policyTypes egress only", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "db"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, nil)},
			[]string{"prod/db eg []"}},
		{"podSelector peers: the policy's namespace only", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "db"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "web")}}}}, nil)},
			[]string{"prod/db in [198.18.0.2,fd00:198:18::2 ]"}},
		{"namespaceSelector and podSelector", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "db"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: sel("app", "web")}}}}, nil)},
			[]string{"prod/db in [198.18.0.2,198.18.1.9,fd00:198:18::2 ]"}},
		{"ipBlock except", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "db"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}}}, nil)},
			[]string{"prod/db in [10.0.0.0-10.0.255.255,10.2.0.0-10.255.255.255 ]"}},
		{"named port resolved on the selected pod; one it lacks allows nothing", []*networkingv1.NetworkPolicy{policy("prod", "p", nil, nil,
			[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &http}}}, {Ports: []networkingv1.NetworkPolicyPort{{Port: &nosuch}}}}, nil)},
			[]string{"prod/db in []", "prod/web in [any tcp/8080]"}},
		{"egress named port: per peer pod", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "web"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil,
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: sel("app", "db")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: &sql}, {Protocol: &udp}}}})},
			[]string{"prod/web eg [198.18.0.3,198.18.1.10 udp; 198.18.1.10 tcp/15432; 198.18.0.3 tcp/5432]"}}, // peers in namespace order
		{"selectors matching no pod allow nothing", []*networkingv1.NetworkPolicy{policy("prod", "p", map[string]string{"app": "db"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "none")}}}}, nil)},
			[]string{"prod/db in []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := netpol.Compile(tc.policies, testNamespaces, testPods)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(p)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

func TestCompile_BadPolicyNamed(t *testing.T) {
	bad := policy("prod", "broken", nil, nil, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "not-a-cidr"}}}}}, nil)
	good := policy("prod", "db-from-web", map[string]string{"app": "db"}, nil, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}, nil)
	p, err := netpol.Compile([]*networkingv1.NetworkPolicy{bad, good}, testNamespaces, testPods)
	var pe *netpol.PolicyError
	if !errors.As(err, &pe) || pe.Policy != "prod/broken" || !strings.Contains(err.Error(), "not-a-cidr") {
		t.Errorf("Compile = %v, want a PolicyError naming prod/broken and the value", err)
	}
	// Fail closed and alone: the broken rule allows nothing, the policy
	// still isolates its pods, and the good policy is whole.
	want := []string{"prod/db in [198.18.0.2,fd00:198:18::2 ]", "prod/web in []"}
	if got := summary(p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("program %q, want %q", got, want)
	}
}

// CIDRs as the API server accepts them.
func TestCompile_CIDRsAsTheAPIReadsThem(t *testing.T) {
	pol := policy("prod", "p", map[string]string{"app": "db"}, nil, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
		{IPBlock: &networkingv1.IPBlock{CIDR: "010.0.0.0/8", Except: []string{"::ffff:10.1.0.0/112"}}},
	}}}, nil)
	p, err := netpol.Compile([]*networkingv1.NetworkPolicy{pol}, testNamespaces, testPods)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"prod/db in [10.0.0.0-10.0.255.255,10.2.0.0-10.255.255.255 ]"}
	if got := summary(p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("program %q, want %q (leading zeros read, the mapped except applied to IPv4)", got, want)
	}
}
