package netpol_test

import (
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

// This file checks Program.Explain against the cases of Kubernetes'
// e2e Netpol suite (test/e2e/network/netpol/network_policy.go of
// k8s.io/kubernetes v1.37.2): its model, its policies and, transcribed
// here, its expected reachability, for every pair of the model's pods.
// Up to v1.34 every spec ran the whole model below; since v1.37 each spec
// runs only the pods it needs (x/a and y/a, say) and checks the same
// policies and expectations on them, so the truth tables here, over all
// nine pods, are the v1.34 suite's, and hold the v1.37 ones.
//
// The suite's model: namespaces x, y and z (each labelled
// kubernetes.io/metadata.name with its name), each with pods a, b and c
// (labelled pod with their name); every pod serves each of the spec's
// ports on each of its protocols, as a container port named
// serve-PORT-PROTO. A spec probes one port and protocol from every pod to
// every other and expects a truth table, all true but for what it
// changes; it ignores a pod's connections to itself, and so does this
// test. Here the nine pods are on one node (the union of what each
// node's table decides), with IPv4 or IPv6 addresses.

// suiteNS and suitePods are the model's namespaces and pod names.
var (
	suiteNS   = []string{"x", "y", "z"}
	suitePods = []string{"a", "b", "c"}
)

// suiteAddr is the address of pod ns/name in the model's family.
func suiteAddr(v6 bool, ns, name string) netip.Addr {
	i, j := indexOf(suiteNS, ns), indexOf(suitePods, name)
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd00:198:18:%d::%d", 10+i, 10+j))
	}
	return netip.MustParseAddr(fmt.Sprintf("198.18.%d.%d", 10+i, 10+j))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	panic("no " + v)
}

// reachability is a spec's truth table: from "ns/pod" to "ns/pod".
type reachability map[[2]string]bool

func allReachable() reachability {
	r := reachability{}
	for _, f := range allSuitePods() {
		for _, t := range allSuitePods() {
			r[[2]string{f, t}] = true
		}
	}
	return r
}

func allSuitePods() []string {
	var out []string
	for _, ns := range suiteNS {
		for _, p := range suitePods {
			out = append(out, ns+"/"+p)
		}
	}
	return out
}

// matches reports whether "ns/pod" is the peer "ns/pod", "ns/" (any pod
// of ns), "/pod" (pod of any namespace) or "" (any): the suite's Peer.
func matches(peer, pod string) bool {
	pns, pname, _ := strings.Cut(peer, "/")
	ns, name, _ := strings.Cut(pod, "/")
	return (pns == "" || pns == ns) && (pname == "" || pname == name)
}

// addrOf is the address of "ns/pod".
func addrOf(v6 bool, pod string) netip.Addr {
	ns, name, _ := strings.Cut(pod, "/")
	return suiteAddr(v6, ns, name)
}

// peer sets every pair from a pod matching from to one matching to (the
// suite's ExpectPeer; Expect for two pods).
func (r reachability) peer(from, to string, ok bool) reachability {
	for k := range r {
		if matches(from, k[0]) && matches(to, k[1]) {
			r[k] = ok
		}
	}
	return r
}

// in sets every pair to pod (ExpectAllIngress); out every pair from it
// (ExpectAllEgress).
func (r reachability) in(pod string, ok bool) reachability  { return r.peer("", pod, ok) }
func (r reachability) out(pod string, ok bool) reachability { return r.peer(pod, "", ok) }

// The policies' parts, in the suite's words.
func nsIs(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
}

func podIs(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"pod": name}}
}

func selExpr(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func npPort(port int32, proto corev1.Protocol) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(port)
	return networkingv1.NetworkPolicyPort{Port: &p, Protocol: &proto}
}

func npNamed(name string) networkingv1.NetworkPolicyPort {
	p := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Port: &p}
}

func from(peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{From: peers}
}

func to(peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: peers}
}

// suitePolicy is a policy of namespace x (the suite's policies' namespace
// unless a spec says otherwise) selecting sel, isolating for ingress
// when in is not nil and for egress when eg is not nil (the suite's
// SetSpecIngressRules and SetSpecEgressRules, with which an empty list
// denies all).
func suitePolicy(ns, name string, sel *metav1.LabelSelector, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if sel != nil {
		p.Spec.PodSelector = *sel
	}
	if in != nil {
		p.Spec.Ingress = in
		p.Spec.PolicyTypes = append(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
	}
	if eg != nil {
		p.Spec.Egress = eg
		p.Spec.PolicyTypes = append(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	}
	return p
}

// ins and egs are rule lists, empty but not nil when given none.
func ins(r ...networkingv1.NetworkPolicyIngressRule) []networkingv1.NetworkPolicyIngressRule {
	return append([]networkingv1.NetworkPolicyIngressRule{}, r...)
}

func egs(r ...networkingv1.NetworkPolicyEgressRule) []networkingv1.NetworkPolicyEgressRule {
	return append([]networkingv1.NetworkPolicyEgressRule{}, r...)
}

var (
	tcp  = corev1.ProtocolTCP
	udp  = corev1.ProtocolUDP
	sctp = corev1.ProtocolSCTP
	all  = metav1.LabelSelector{}
)

// suiteStep is one probe of a spec: the policies in force (and labels
// the spec added), the port and protocol, and the expected truth table.
type suiteStep struct {
	spec string // the suite's spec, and the step's ("after ...") if more than one
	// ports and protos are the model's (default: 80, TCP).
	ports  []int32
	protos []corev1.Protocol
	// nsLabels and podLabels are labels the spec added ("y", "x/b").
	nsLabels  map[string]map[string]string
	podLabels map[string]map[string]string
	policies  func(v6 bool) []*networkingv1.NetworkPolicy
	port      int32
	proto     corev1.Protocol
	want      reachability
}

// suiteModel is the model's namespaces and pods for a step.
func suiteModel(s suiteStep, v6 bool) ([]netpol.Namespace, []netpol.Pod) {
	ports, protos := s.ports, s.protos
	if ports == nil {
		ports = []int32{80}
	}
	if protos == nil {
		protos = []corev1.Protocol{tcp}
	}
	var nss []netpol.Namespace
	var pods []netpol.Pod
	for _, ns := range suiteNS {
		l := map[string]string{corev1.LabelMetadataName: ns}
		for k, v := range s.nsLabels[ns] {
			l[k] = v
		}
		nss = append(nss, netpol.Namespace{Name: ns, Labels: l})
		for _, name := range suitePods {
			pl := map[string]string{"pod": name}
			for k, v := range s.podLabels[ns+"/"+name] {
				pl[k] = v
			}
			p := netpol.Pod{Namespace: ns, Name: name, Labels: pl, IPs: []netip.Addr{suiteAddr(v6, ns, name)}, Local: true}
			for _, port := range ports {
				for _, proto := range protos {
					p.Ports = append(p.Ports, netpol.NamedPort{Name: fmt.Sprintf("serve-%d-%s", port, lower(proto)), Protocol: protocolOf(proto), Port: uint16(port)})
				}
			}
			pods = append(pods, p)
		}
	}
	return nss, pods
}

func lower(p corev1.Protocol) string {
	switch p {
	case udp:
		return "udp"
	case sctp:
		return "sctp"
	}
	return "tcp"
}

func protocolOf(p corev1.Protocol) netpol.Protocol {
	switch p {
	case udp:
		return netpol.UDP
	case sctp:
		return netpol.SCTP
	}
	return netpol.TCP
}

// hostCIDR is the /32 or /128 of a model pod; largeCIDR the /4 around it
// (the suite's makeLargeCIDRForIP).
func hostCIDR(v6 bool, pod string) string {
	a := addrOf(v6, pod)
	return netip.PrefixFrom(a, a.BitLen()).String()
}

func largeCIDR(v6 bool, pod string) string {
	p, _ := addrOf(v6, pod).Prefix(4)
	return p.String()
}

func policies(p ...*networkingv1.NetworkPolicy) func(bool) []*networkingv1.NetworkPolicy {
	return func(bool) []*networkingv1.NetworkPolicy { return p }
}

// suiteSteps are the suite's specs (v1.37.2), in its order; the SCTP and
// UDP variants follow the TCP ones, and two cases of the model that the
// suite lacks (endPort, egress to DNS only) close the list.
func suiteSteps() []suiteStep {
	denyIngressX := suitePolicy("x", "deny-ingress", &all, ins(), nil)
	allowPort81 := suitePolicy("x", "allow-client-a-via-ns-selector", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{npPort(81, tcp)}}), nil)
	allowPort80 := suitePolicy("x", "allow-client-a-via-ns-selector-80", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{npPort(80, tcp)}}), nil)
	onlyFromYA := func(proto corev1.Protocol) suiteStep {
		return suiteStep{
			spec:     "should enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector (" + lower(proto) + ")",
			protos:   []corev1.Protocol{proto},
			policies: policies(suitePolicy("x", "allow-ns-y-pod-a-via-namespace-pod-selector", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{NamespaceSelector: nsIs("y"), PodSelector: podIs("a")})), nil)),
			port:     80, proto: proto,
			want: allReachable().in("x/a", false).peer("y/a", "x/a", true),
		}
	}
	byPorts := func(proto corev1.Protocol) suiteStep {
		return suiteStep{
			spec:   "should enforce policy based on Ports (" + lower(proto) + ")",
			ports:  []int32{81},
			protos: []corev1.Protocol{proto},
			policies: policies(suitePolicy("x", "allow-ingress-on-port-81-ns-x", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{npPort(81, proto)}}), nil)),
			port: 81, proto: proto,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		}
	}
	defaultDeny := func(proto corev1.Protocol) suiteStep {
		return suiteStep{
			spec:     "should support a 'default-deny-ingress' policy (" + lower(proto) + ")",
			protos:   []corev1.Protocol{proto},
			policies: policies(suitePolicy("x", "deny-all", &all, ins(), nil)),
			port:     80, proto: proto,
			want: allReachable().peer("", "x/", false),
		}
	}
	exceptB := func(v6 bool) *networkingv1.NetworkPolicy {
		return suitePolicy("x", "allow-client-a-via-cidr-egress-rule", podIs("a"), nil, egs(to(networkingv1.NetworkPolicyPeer{
			IPBlock: &networkingv1.IPBlock{CIDR: largeCIDR(v6, "x/b"), Except: []string{hostCIDR(v6, "x/b")}}})))
	}
	fromNS := func(sel *metav1.LabelSelector) []networkingv1.NetworkPolicyIngressRule {
		return ins(from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel}))
	}
	allowEgressNamed80 := suitePolicy("x", "allow-egress", &all, nil, egs(networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npNamed("serve-80-tcp")}}))
	together := suitePolicy("x", "allow-client-a-via-pod-selector", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{PodSelector: podIs("b")})),
		egs(networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: ptrInt(80)}}}))
	together.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress}
	xaToYA := networkingv1.NetworkPolicyPeer{NamespaceSelector: nsIs("y"), PodSelector: podIs("a")}
	fromXA := ins(from(networkingv1.NetworkPolicyPeer{NamespaceSelector: nsIs("x"), PodSelector: podIs("a")}))
	allowPort80Any := suitePolicy("x", "allow-ingress-port-80", &all, ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: ptrInt(80)}}}), nil)
	allowEgressPort80 := suitePolicy("x", "allow-egress-port-80", &all, nil, egs(networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: ptrInt(80)}}}))
	denyAllX := suitePolicy("x", "deny-all", &all, ins(), egs())
	egressForA := suitePolicy("x", "allow-egress-for-target", podIs("a"), nil, egs(networkingv1.NetworkPolicyEgressRule{}))
	end := int32(81)

	return []suiteStep{
		defaultDeny(tcp),
		{
			spec:     "should support a 'default-deny-all' policy",
			policies: policies(denyAllX),
			port:     80, proto: tcp,
			want: allReachable().peer("", "x/", false).peer("x/", "", false),
		},
		{
			spec:     "should enforce policy to allow traffic from pods within server namespace based on PodSelector",
			policies: policies(suitePolicy("x", "x-a-allows-x-b", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{PodSelector: podIs("b")})), nil)),
			port:     80, proto: tcp,
			want: allReachable().in("x/a", false).peer("x/b", "x/a", true),
		},
		{
			spec: "should enforce policy to allow ingress traffic for a target",
			policies: policies(suitePolicy("x", "deny-all", &all, ins(), nil),
				suitePolicy("x", "allow-all-to-a", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{PodSelector: &all, NamespaceSelector: &all})), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", true).in("x/b", false).in("x/c", false),
		},
		{
			spec:     "should enforce policy to allow ingress traffic from pods in all namespaces",
			policies: policies(suitePolicy("x", "allow-from-another-ns", podIs("a"), fromNS(&metav1.LabelSelector{MatchLabels: map[string]string{}}), nil)),
			port:     80, proto: tcp,
			want: allReachable(),
		},
		{
			spec:     "should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector",
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector", podIs("a"), fromNS(nsIs("y")), nil)),
			port:     80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec:     "should enforce policy based on PodSelector with MatchExpressions",
			policies: policies(suitePolicy("x", "x-a-allows-x-b", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{PodSelector: selExpr("pod", metav1.LabelSelectorOpIn, "b")})), nil)),
			port:     80, proto: tcp,
			want: allReachable().in("x/a", false).peer("x/b", "x/a", true),
		},
		{
			spec:     "should enforce policy based on NamespaceSelector with MatchExpressions",
			policies: policies(suitePolicy("x", "allow-ns-y-match-selector", podIs("a"), fromNS(selExpr(corev1.LabelMetadataName, metav1.LabelSelectorOpIn, "y")), nil)),
			port:     80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "should enforce policy based on PodSelector or NamespaceSelector",
			policies: policies(suitePolicy("x", "allow-ns-y-match-selector", podIs("a"), ins(from(
				networkingv1.NetworkPolicyPeer{NamespaceSelector: selExpr(corev1.LabelMetadataName, metav1.LabelSelectorOpNotIn, "x")},
				networkingv1.NetworkPolicyPeer{PodSelector: podIs("b")})), nil)),
			port: 80, proto: tcp,
			want: allReachable().peer("x/a", "x/a", false).peer("x/c", "x/a", false),
		},
		{
			spec: "should enforce policy based on PodSelector and NamespaceSelector",
			policies: policies(suitePolicy("x", "allow-ns-y-podselector-and-nsselector", podIs("a"), ins(from(
				networkingv1.NetworkPolicyPeer{NamespaceSelector: selExpr(corev1.LabelMetadataName, metav1.LabelSelectorOpNotIn, "x"), PodSelector: podIs("b")})), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", false).peer("y/b", "x/a", true).peer("z/b", "x/a", true),
		},
		{
			spec: "should enforce policy based on Multiple PodSelectors and NamespaceSelectors",
			policies: policies(suitePolicy("x", "allow-ns-y-z-pod-b-c", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{
				NamespaceSelector: selExpr(corev1.LabelMetadataName, metav1.LabelSelectorOpNotIn, "x"),
				PodSelector:       selExpr("pod", metav1.LabelSelectorOpIn, "b", "c")})), nil)),
			port: 80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("y/a", "x/a", false).peer("z/a", "x/a", false),
		},
		{
			spec: "should enforce policy based on any PodSelectors",
			policies: policies(suitePolicy("x", "allow-ns-x-pod-b-c", podIs("a"), ins(from(
				networkingv1.NetworkPolicyPeer{PodSelector: podIs("b")}, networkingv1.NetworkPolicyPeer{PodSelector: podIs("c")})), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", false).peer("x/b", "x/a", true).peer("x/c", "x/a", true),
		},
		onlyFromYA(tcp),
		byPorts(tcp),
		{
			spec: "should enforce multiple, stacked policies with overlapping podSelectors (port 81)", ports: []int32{80, 81},
			policies: policies(allowPort81), port: 81, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "should enforce multiple, stacked policies with overlapping podSelectors (port 80)", ports: []int32{80, 81},
			policies: policies(allowPort81), port: 80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec: "should enforce multiple, stacked policies with overlapping podSelectors (port 80, after the policy for it)", ports: []int32{80, 81},
			policies: policies(allowPort81, allowPort80), port: 80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "should support allow-all policy (port 81)", ports: []int32{80, 81},
			policies: policies(suitePolicy("x", "allow-all", &all, ins(networkingv1.NetworkPolicyIngressRule{}), nil)), port: 81, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should allow ingress access on one named port (port 81)", ports: []int32{80, 81},
			policies: policies(suitePolicy("x", "allow-all", &all, ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{npNamed("serve-81-tcp")}}), nil)),
			port:     81, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should allow ingress access on one named port (port 80)", ports: []int32{80, 81},
			policies: policies(suitePolicy("x", "allow-all", &all, ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{npNamed("serve-81-tcp")}}), nil)),
			port:     80, proto: tcp,
			want: allReachable().peer("", "x/", false),
		},
		{
			spec: "should allow ingress access from namespace on one named port (port 80)", ports: []int32{80, 81},
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector-80", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: ptrNamed("serve-80-tcp"), Protocol: &tcp}}}), nil)),
			port: 80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "should allow ingress access from namespace on one named port (port 81)", ports: []int32{80, 81},
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector-80", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: ptrNamed("serve-80-tcp"), Protocol: &tcp}}}), nil)),
			port: 81, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec: "should allow egress access on one named port (port 80)", ports: []int32{80, 81},
			policies: policies(allowEgressNamed80), port: 80, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should allow egress access on one named port (port 81)", ports: []int32{80, 81},
			policies: policies(allowEgressNamed80), port: 81, proto: tcp,
			want: allReachable().peer("x/", "", false),
		},
		{
			// New in v1.37: a rule whose only port is a name no container
			// port has allows nothing, and the pod stays isolated.
			spec: "should not allow all ports if it cannot limit to the requested port",
			policies: policies(suitePolicy("x", "allow-ingress-on-nonexistent-port", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptrNamed("no-such-port"), Protocol: &tcp}}}), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec:     "should enforce updated policy (allow all)",
			ports:    []int32{81},
			policies: policies(suitePolicy("x", "allow-all-mutate-to-deny-all", &all, ins(networkingv1.NetworkPolicyIngressRule{}), nil)), port: 81, proto: tcp,
			want: allReachable(),
		},
		{
			spec:     "should enforce updated policy (updated to deny all)",
			ports:    []int32{81},
			policies: policies(suitePolicy("x", "allow-all-mutate-to-deny-all", &all, ins(), nil)), port: 81, proto: tcp,
			want: allReachable().peer("", "x/", false),
		},
		{
			spec:     "should allow ingress access from updated namespace (before the label)",
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector", podIs("a"), fromNS(&metav1.LabelSelector{MatchLabels: map[string]string{"ns2": "updated"}}), nil)),
			port:     80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec:     "should allow ingress access from updated namespace (y labelled ns2=updated)",
			nsLabels: map[string]map[string]string{"y": {"ns2": "updated"}},
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector", podIs("a"), fromNS(&metav1.LabelSelector{MatchLabels: map[string]string{"ns2": "updated"}}), nil)),
			port:     80, proto: tcp,
			want: allReachable().in("x/a", false).peer("y/", "", true),
		},
		{
			spec: "should allow ingress access from updated pod (before the label)",
			policies: policies(suitePolicy("x", "allow-client-a-via-pod-selector", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "b", "pod2": "updated"}}})), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec:      "should allow ingress access from updated pod (x/b labelled pod2=updated)",
			podLabels: map[string]map[string]string{"x/b": {"pod2": "updated"}},
			policies: policies(suitePolicy("x", "allow-client-a-via-pod-selector", podIs("a"), ins(from(networkingv1.NetworkPolicyPeer{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "b", "pod2": "updated"}}})), nil)),
			port: 80, proto: tcp,
			want: allReachable().in("x/a", false).peer("x/b", "x/a", true),
		},
		{
			spec:     "should deny ingress from pods on other namespaces",
			policies: policies(suitePolicy("x", "deny-empty-policy", &all, ins(from(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{}}})), nil)),
			port:     80, proto: tcp,
			want: allReachable().peer("y/", "x/", false).peer("z/", "x/", false),
		},
		{
			spec:     "should deny ingress access to updated pod (before the label)",
			policies: policies(suitePolicy("x", "deny-ingress-via-label-selector", &metav1.LabelSelector{MatchLabels: map[string]string{"target": "isolated"}}, ins(), nil)),
			port:     80, proto: tcp,
			want: allReachable(),
		},
		{
			spec:      "should deny ingress access to updated pod (x/a labelled target=isolated)",
			podLabels: map[string]map[string]string{"x/a": {"target": "isolated"}},
			policies:  policies(suitePolicy("x", "deny-ingress-via-label-selector", &metav1.LabelSelector{MatchLabels: map[string]string{"target": "isolated"}}, ins(), nil)),
			port:      80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec:     "should deny egress from pods based on PodSelector",
			policies: policies(suitePolicy("x", "deny-egress-pod-a", podIs("a"), nil, egs())),
			port:     80, proto: tcp,
			want: allReachable().out("x/a", false),
		},
		{
			spec:     "should deny egress from all pods in a namespace",
			policies: policies(suitePolicy("x", "deny-egress-ns-x", &all, nil, egs())),
			port:     80, proto: tcp,
			want: allReachable().peer("x/", "", false),
		},
		{
			spec: "should work with Ingress, Egress specified together (port 80)", ports: []int32{80, 81},
			policies: policies(together), port: 80, proto: tcp,
			want: allReachable().in("x/a", false).peer("x/b", "x/a", true),
		},
		{
			spec: "should work with Ingress, Egress specified together (port 81)", ports: []int32{80, 81},
			policies: policies(together), port: 81, proto: tcp,
			want: allReachable().in("x/a", false).out("x/a", false).peer("x/b", "x/a", true),
		},
		{
			spec: "should support denying of egress traffic on the client side (even if the server explicitly allows this traffic)",
			policies: policies(
				suitePolicy("x", "allow-to-ns-y-pod-a", podIs("a"), nil, egs(to(xaToYA))),
				suitePolicy("y", "allow-from-xa-on-ya-match-selector", podIs("a"), fromXA, nil),
				suitePolicy("y", "allow-from-xa-on-yb-match-selector", podIs("b"), fromXA, nil)),
			port: 80, proto: tcp,
			want: allReachable().out("x/a", false).in("y/a", false).peer("x/a", "y/a", true).in("y/b", false),
		},
		{
			spec:     "should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector",
			policies: policies(suitePolicy("x", "allow-to-ns-y-pod-a", podIs("a"), nil, egs(to(xaToYA)))),
			port:     80, proto: tcp,
			want: allReachable().out("x/a", false).peer("x/a", "y/a", true),
		},
		{
			spec: "should enforce ingress policy allowing any port traffic to a server on a specific protocol (tcp)", protos: []corev1.Protocol{tcp, udp},
			policies: policies(suitePolicy("x", "allow-ingress-by-proto", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp}}}), nil)),
			port:     80, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should enforce ingress policy allowing any port traffic to a server on a specific protocol (udp)", protos: []corev1.Protocol{tcp, udp},
			policies: policies(suitePolicy("x", "allow-ingress-by-proto", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp}}}), nil)),
			port:     80, proto: udp,
			want: allReachable().peer("", "x/a", false),
		},
		{
			spec: "should enforce multiple ingress policies with ingress allow-all policy taking precedence (port 80 only)", ports: []int32{81},
			policies: policies(allowPort80Any), port: 81, proto: tcp,
			want: allReachable().peer("", "x/", false),
		},
		{
			spec: "should enforce multiple ingress policies with ingress allow-all policy taking precedence (and allow-all)", ports: []int32{81},
			policies: policies(allowPort80Any, suitePolicy("x", "allow-ingress", &all, ins(networkingv1.NetworkPolicyIngressRule{}), nil)), port: 81, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should enforce multiple egress policies with egress allow-all policy taking precedence (port 80 only)", ports: []int32{81},
			policies: policies(allowEgressPort80), port: 81, proto: tcp,
			want: allReachable().peer("x/", "", false),
		},
		{
			spec: "should enforce multiple egress policies with egress allow-all policy taking precedence (and allow-all)", ports: []int32{81},
			policies: policies(allowEgressPort80, suitePolicy("x", "allow-egress", &all, nil, egs(networkingv1.NetworkPolicyEgressRule{}))), port: 81, proto: tcp,
			want: allReachable(),
		},
		{
			spec:     "should stop enforcing policies after they are deleted (before)",
			policies: policies(denyAllX), port: 80, proto: tcp,
			want: allReachable().peer("x/", "", false).peer("", "x/", false),
		},
		{
			spec:     "should stop enforcing policies after they are deleted (after)",
			policies: policies(), port: 80, proto: tcp,
			want: allReachable(),
		},
		{
			spec: "should allow egress access to server in CIDR block",
			policies: func(v6 bool) []*networkingv1.NetworkPolicy {
				return []*networkingv1.NetworkPolicy{suitePolicy("x", "allow-client-a-via-cidr-egress-rule", podIs("a"), nil,
					egs(to(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: hostCIDR(v6, "y/b")}})))}
			},
			port: 80, proto: tcp,
			want: allReachable().out("x/a", false).peer("x/a", "y/b", true),
		},
		{
			spec:     "should enforce except clause while egress access to server in CIDR block",
			policies: func(v6 bool) []*networkingv1.NetworkPolicy { return []*networkingv1.NetworkPolicy{exceptB(v6)} },
			port:     80, proto: tcp,
			want: allReachable().peer("x/a", "x/b", false),
		},
		{
			spec:     "should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed (the except)",
			policies: func(v6 bool) []*networkingv1.NetworkPolicy { return []*networkingv1.NetworkPolicy{exceptB(v6)} },
			port:     80, proto: tcp,
			want: allReachable().peer("x/a", "x/b", false),
		},
		{
			spec: "should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed (updated to x/b's address)",
			policies: func(v6 bool) []*networkingv1.NetworkPolicy {
				return []*networkingv1.NetworkPolicy{suitePolicy("x", "allow-client-a-via-cidr-egress-rule", podIs("a"), nil,
					egs(to(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: hostCIDR(v6, "x/b")}})))}
			},
			port: 80, proto: tcp,
			want: allReachable().out("x/a", false).peer("x/a", "x/b", true),
		},
		{
			spec:     "should enforce policies to check ingress and egress policies can be controlled independently based on PodSelector (egress policy)",
			policies: policies(egressForA), port: 80, proto: tcp,
			want: allReachable(),
		},
		{
			spec:     "should enforce policies to check ingress and egress policies can be controlled independently based on PodSelector (and ingress deny)",
			policies: policies(egressForA, suitePolicy("x", "deny-ingress-via-label-selector", podIs("a"), ins(), nil)), port: 80, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec: "should not mistakenly treat 'protocol: SCTP' as 'protocol: TCP', even if the plugin doesn't support SCTP", ports: []int32{81},
			policies: policies(denyIngressX, suitePolicy("x", "allow-only-sctp-ingress-on-port-81", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(81, sctp)}}), nil)),
			port:     81, proto: tcp,
			want: allReachable().peer("", "x/", false),
		},
		{
			spec: "should properly isolate pods that are selected by a policy allowing SCTP, even if the plugin doesn't support SCTP", ports: []int32{81},
			policies: policies(suitePolicy("x", "allow-only-sctp-ingress-on-port-80", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(80, sctp)}}), nil)),
			port:     81, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec: "should not allow access by TCP when a policy specifies only UDP", ports: []int32{81},
			policies: policies(suitePolicy("x", "allow-only-udp-ingress-on-port-81", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(81, udp)}}), nil)),
			port:     81, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		{
			spec:     "should enforce policy to allow traffic based on NamespaceSelector with MatchLabels using default ns label",
			policies: policies(suitePolicy("x", "allow-client-a-via-ns-selector-for-immutable-ns-label", podIs("a"), fromNS(nsIs("y")), nil)),
			port:     80, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "should enforce policy based on NamespaceSelector with MatchExpressions using default ns label",
			policies: policies(suitePolicy("x", "allow-ns-y-match-selector-for-immutable-ns-label", podIs("a"), nil,
				egs(to(networkingv1.NetworkPolicyPeer{NamespaceSelector: selExpr(corev1.LabelMetadataName, metav1.LabelSelectorOpNotIn, "y")})))),
			port: 80, proto: tcp,
			want: allReachable().peer("x/a", "y/", false),
		},
		defaultDeny(udp),
		byPorts(udp),
		onlyFromYA(udp),
		defaultDeny(sctp),
		byPorts(sctp),
		onlyFromYA(sctp),
		// Not in the suite: an endPort range, in its model (ports
		// 80 to 82; from namespace y to x/a on 80-81).
		{
			spec: "nrinet: endPort range (port 81, in the range)", ports: []int32{80, 81, 82},
			policies: policies(suitePolicy("x", "allow-y-80-81", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: ptrInt(80), EndPort: &end, Protocol: &tcp}}}), nil)),
			port: 81, proto: tcp,
			want: allReachable().peer("x/", "x/a", false).peer("z/", "x/a", false),
		},
		{
			spec: "nrinet: endPort range (port 82, past it)", ports: []int32{80, 81, 82},
			policies: policies(suitePolicy("x", "allow-y-80-81", podIs("a"), ins(networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("y")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: ptrInt(80), EndPort: &end, Protocol: &tcp}}}), nil)),
			port: 82, proto: tcp,
			want: allReachable().in("x/a", false),
		},
		// Not in the suite: namespace x's pods may send DNS only
		// (port 53, UDP and TCP, to the DNS pods: z/c here), the usual
		// lockdown.
		{
			spec: "nrinet: egress to DNS only (53/udp to z/c)", ports: []int32{53, 80}, protos: []corev1.Protocol{tcp, udp},
			policies: policies(suitePolicy("x", "dns-only", &all, nil, egs(networkingv1.NetworkPolicyEgressRule{
				To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("z"), PodSelector: podIs("c")}}, Ports: []networkingv1.NetworkPolicyPort{npPort(53, udp), npPort(53, tcp)}}))),
			port: 53, proto: udp,
			want: allReachable().peer("x/", "", false).peer("x/", "z/c", true),
		},
		{
			spec: "nrinet: egress to DNS only (80/tcp to z/c)", ports: []int32{53, 80}, protos: []corev1.Protocol{tcp, udp},
			policies: policies(suitePolicy("x", "dns-only", &all, nil, egs(networkingv1.NetworkPolicyEgressRule{
				To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsIs("z"), PodSelector: podIs("c")}}, Ports: []networkingv1.NetworkPolicyPort{npPort(53, udp), npPort(53, tcp)}}))),
			port: 80, proto: tcp,
			want: allReachable().peer("x/", "", false),
		},
	}
}

func ptrNamed(name string) *intstr.IntOrString {
	v := intstr.FromString(name)
	return &v
}

// TestProgram_Explain_NetpolSuite: for each spec of the suite (and
// step of it), in both families, Explain's verdict on every pair of the
// model's pods but a pod and itself is the suite's expectation, and an
// allowed pair that some policy isolates names the policy that allows it.
func TestProgram_Explain_NetpolSuite(t *testing.T) {
	steps := suiteSteps()
	if len(steps) < 15 {
		t.Fatalf("%d steps", len(steps))
	}
	for _, s := range steps {
		for _, v6 := range []bool{false, true} {
			name := s.spec + map[bool]string{false: " ipv4", true: " ipv6"}[v6]
			t.Run(name, func(t *testing.T) {
				nss, pods := suiteModel(s, v6)
				p, err := netpol.Compile(s.policies(v6), nss, pods)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range allSuitePods() {
					for _, to := range allSuitePods() {
						if f == to {
							continue // the suite ignores loopback
						}
						flow := netpol.Flow{Src: addrOf(v6, f), Dst: addrOf(v6, to), Protocol: protocolOf(s.proto), Port: uint16(s.port)}
						e := p.Explain(flow)
						if want := s.want[[2]string{f, to}]; e.Allowed() != want {
							t.Errorf("%s -> %s %d/%s: Explain = %q, the suite expects allowed %v", f, to, s.port, lower(s.proto), e, want)
						}
						for _, v := range []netpol.Verdict{e.Egress, e.Ingress} {
							if v.Pod != "" && v.Allowed() && !v.Self && len(v.AllowedBy) == 0 {
								t.Errorf("%s -> %s: %q allows without naming a policy", f, to, e)
							}
						}
					}
				}
			})
		}
	}
}
