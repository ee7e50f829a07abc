package netpol

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"go4.org/netipx"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilnet "k8s.io/utils/net"
)

// PolicyError is the error of [Compile] for a policy it cannot compile
// (a selector the API server should have refused); it names the policy.
type PolicyError struct {
	Policy string // namespace/name
	Err    error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("netpol: policy %s: %v", e.Policy, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// Compile computes, for every local pod that some policy selects, the
// ingress and egress rules the policies give it, following the
// NetworkPolicy API (networking.k8s.io/v1):
//
//   - a policy selects the pods of its namespace that its podSelector
//     matches (an empty selector: all of them);
//   - its policyTypes say which directions it isolates the selected pods
//     in; without them, ingress always and egress when it has egress
//     rules;
//   - a pod isolated in a direction is allowed there what the union of the
//     selecting policies' rules of that direction allows, and nothing
//     else;
//   - a rule allows its peers (from or to; none: every address) on its
//     ports (none: every port). A peer is an ipBlock (a CIDR less its
//     excepts) or pods: podSelector alone in the policy's namespace,
//     namespaceSelector alone all pods of the matching namespaces, both
//     the matching pods of the matching namespaces;
//   - a port is a protocol (TCP when unset) and a number, a range
//     (endPort) or a name. A name is resolved against the pod the traffic
//     goes to: the selected pod's own ports for ingress, each peer pod's
//     for egress (so an egress rule with a named port never matches an
//     ipBlock). A rule whose ports all fail to resolve allows nothing.
//
// Pods without addresses are no one's peers. The result is deterministic:
// pods in the order of their keys, rules in the order of the policies'
// keys and then as written.
//
// A policy the API server accepted but Compile cannot read fails closed
// and alone: with a podSelector it cannot read, the policy is left out
// (it selects no pod it can name); a rule it cannot read allows nothing,
// while the policy still isolates the pods it selects. The program
// comes back with the other policies whole, and the error (one
// [*PolicyError] per problem, joined) names each policy and value. CIDRs
// are read as the API server reads them: leading zeros allowed, and an
// IPv4-mapped IPv6 prefix taken as the IPv4 one.
//
// One policy may put at most [DefaultMaxPolicyElements] set elements and
// rules into the table (its peers' sets counted once, however many pods
// it selects; its rules once per selected pod): a bigger one fails closed
// too, allowing nothing while isolating its pods, with an
// [*OversizedError] naming it, and is listed in [Program.Oversized].
// [CompileMax] takes another bound.
func Compile(policies []*networkingv1.NetworkPolicy, namespaces []Namespace, pods []Pod) (*Program, error) {
	return CompileMax(policies, namespaces, pods, DefaultMaxPolicyElements)
}

// DefaultMaxPolicyElements is how many set elements and rules one policy
// may put into the table: room for peers of 16,000 address ranges (an
// ipBlock with as many excepts, or as many pods at scattered addresses).
// A write of that much takes tens of milliseconds; without a bound one
// policy can make the node's table arbitrarily large and its writes
// arbitrarily slow.
const DefaultMaxPolicyElements = 32768

// CompileMax is [Compile] with max set elements and rules per policy (0:
// no bound).
func CompileMax(policies []*networkingv1.NetworkPolicy, namespaces []Namespace, pods []Pod, max int) (*Program, error) {
	return compileMax(nil, policies, namespaces, pods, max)
}

// compileMax is CompileMax with ipBlocks' sets from cache (nil: none).
func compileMax(cache *Cache, policies []*networkingv1.NetworkPolicy, namespaces []Namespace, pods []Pod, max int) (*Program, error) {
	c := compiler{nsLabels: map[string]labels.Set{}, pods: pods, byNS: map[string][]*Pod{}, cache: cache}
	for _, ns := range namespaces {
		c.nsLabels[ns.Name] = ns.Labels
	}
	for i := range pods {
		if len(pods[i].IPs) > 0 {
			c.byNS[pods[i].Namespace] = append(c.byNS[pods[i].Namespace], &pods[i])
		}
	}
	sorted := slices.Clone(policies)
	slices.SortFunc(sorted, func(a, b *networkingv1.NetworkPolicy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	byPod := map[string]*PodRules{}
	var errs []error
	for _, pol := range sorted {
		c.errs = nil
		c.policy(pol, byPod)
		for _, err := range c.errs {
			errs = append(errs, &PolicyError{Policy: pol.Namespace + "/" + pol.Name, Err: err})
		}
	}
	p := &Program{}
	for _, pr := range byPod {
		p.Pods = append(p.Pods, *pr)
	}
	slices.SortFunc(p.Pods, func(a, b PodRules) int { return cmp.Compare(a.Pod, b.Pod) })
	if max > 0 {
		for _, o := range p.capPolicies(max) {
			errs = append(errs, &PolicyError{Policy: o.Policy, Err: &OversizedError{Policy: o.Policy, Elements: o.Elements, Max: max}})
			p.Oversized = append(p.Oversized, o)
		}
	}
	return p, errors.Join(errs...)
}

// OversizedError reports a policy that would put more set elements and
// rules into the table than one policy may: it allows nothing, and still
// isolates the pods it selects.
type OversizedError struct {
	Policy        string
	Elements, Max int
}

func (e *OversizedError) Error() string {
	return fmt.Sprintf("needs %d set elements and rules, more than the %d one policy may have: it allows nothing (the pods it selects stay isolated)", e.Elements, e.Max)
}

// Oversized is a policy left out of the table for its size.
type Oversized struct {
	Policy   string // namespace/name
	Elements int    // what it would have needed
}

// capPolicies takes out the rules of every policy whose rules and peer
// sets exceed limit, keeping the pods isolated, and returns those policies
// in the order of their names.
func (p *Program) capPolicies(limit int) []Oversized {
	type peerSize struct{ fams, elements int }
	sizes := map[*netipx.IPSet]peerSize{} // each peer set measured once
	measure := func(s *netipx.IPSet) peerSize {
		if ps, ok := sizes[s]; ok {
			return ps
		}
		var ps peerSize
		var v4, v6 bool
		for _, r := range s.Ranges() {
			if r.From().Is6() {
				v6 = true
			} else {
				v4 = true
			}
			ps.elements += 2 // start, and end (but after a family's last address)
		}
		for _, b := range []bool{v4, v6} {
			if b {
				ps.fams++
			}
		}
		sizes[s] = ps
		return ps
	}
	size := map[string]int{}
	counted := map[string]bool{} // PeersIDs whose sets are counted
	for _, pr := range p.Pods {
		for _, d := range []*Direction{pr.Ingress, pr.Egress} {
			if d == nil {
				continue
			}
			for _, r := range d.Rules {
				fams := 2 // any peer: both families
				if r.Peers != nil {
					ps := measure(r.Peers)
					fams = ps.fams
					if r.PeersID == "" || !counted[r.PeersID] {
						counted[r.PeersID] = r.PeersID != ""
						size[r.Policy] += ps.elements
					}
				}
				size[r.Policy] += fams * max(1, len(r.Ports)) // the chain's rules
			}
		}
	}
	var out []Oversized
	for _, name := range slices.Sorted(maps.Keys(size)) {
		if size[name] > limit {
			out = append(out, Oversized{Policy: name, Elements: size[name]})
		}
	}
	if len(out) == 0 {
		return nil
	}
	for i := range p.Pods {
		for _, d := range []*Direction{p.Pods[i].Ingress, p.Pods[i].Egress} {
			if d != nil {
				d.Rules = slices.DeleteFunc(d.Rules, func(r Rule) bool {
					return slices.ContainsFunc(out, func(o Oversized) bool { return o.Policy == r.Policy })
				})
			}
		}
	}
	return out
}

type compiler struct {
	nsLabels map[string]labels.Set
	pods     []Pod
	// errs are the current policy's problems.
	errs []error
	// byNS are the pods with addresses, by namespace.
	byNS map[string][]*Pod
	// memo holds the peers of each peer list met, by the policy's
	// namespace and the list's text: policies often repeat a peer list
	// ("from the monitoring namespace"), and its pods and addresses are
	// then computed once per Compile.
	memo map[string]*memoPeers
	// cache keeps ipBlocks' sets from one compile to the next (nil: no
	// cache).
	cache *Cache
}

type memoPeers struct {
	p   peers
	err error
	// set are the addresses of p (addrs), once asked for.
	set    *netipx.IPSet
	setErr error
	setOK  bool
}

// peerList returns the peers of a rule's peer list, computed once per
// list and namespace.
func (c *compiler) peerList(policyNS string, list []networkingv1.NetworkPolicyPeer) *memoPeers {
	var k strings.Builder
	k.WriteString(policyNS)
	for _, p := range list {
		k.WriteByte(0)
		k.WriteString(p.String())
	}
	if m := c.memo[k.String()]; m != nil {
		return m
	}
	m := &memoPeers{}
	m.p, m.err = c.peers(policyNS, list)
	if c.memo == nil {
		c.memo = map[string]*memoPeers{}
	}
	c.memo[k.String()] = m
	return m
}

// addrs are the addresses of the peers (addrs), computed once.
func (m *memoPeers) addrs() (*netipx.IPSet, error) {
	if !m.setOK {
		m.set, m.setErr = addrs(m.p.pods, m.p.blocks)
		m.setOK = true
	}
	return m.set, m.setErr
}

func (c *compiler) policy(pol *networkingv1.NetworkPolicy, byPod map[string]*PodRules) {
	name := pol.Namespace + "/" + pol.Name
	sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("podSelector: %w (the policy is left out)", err))
		return
	}
	ingress, egress := false, len(pol.Spec.Egress) > 0
	if len(pol.Spec.PolicyTypes) == 0 {
		ingress = true
	} else {
		egress = false
		for _, t := range pol.Spec.PolicyTypes {
			switch t {
			case networkingv1.PolicyTypeIngress:
				ingress = true
			case networkingv1.PolicyTypeEgress:
				egress = true
			default:
				c.errs = append(c.errs, fmt.Errorf("policyTypes: %q is neither Ingress nor Egress (ignored)", t))
			}
		}
	}
	var selected []*Pod
	for _, pod := range c.byNS[pol.Namespace] {
		if pod.Local && sel.Matches(labels.Set(pod.Labels)) {
			selected = append(selected, pod)
		}
	}
	if len(selected) == 0 {
		return // isolates no pod of this node
	}
	// What the rules allow depends on the selected pod only through
	// named ports of ingress rules: peers (and egress rules whole) are
	// computed once per policy.
	type ingressPrep struct {
		peers *netipx.IPSet // nil: any
		none  bool          // peers matched nothing
		specs []portSpec
		id    string // the peers' PeersID
	}
	var ins []ingressPrep
	var egs []Rule
	if ingress {
		for j, r := range pol.Spec.Ingress {
			m := c.peerList(pol.Namespace, r.From)
			pe, err := m.p, m.err
			var specs []portSpec
			if err == nil {
				specs, err = portSpecs(r.Ports)
			}
			prep := ingressPrep{specs: specs, id: fmt.Sprintf("%s ingress %d", name, j)}
			if err == nil && !pe.any {
				if prep.peers, err = m.addrs(); err == nil {
					prep.none = len(prep.peers.Ranges()) == 0
				}
			}
			if err != nil {
				c.errs = append(c.errs, fmt.Errorf("ingress rule %d: %w (the rule allows nothing)", j, err))
				continue
			}
			ins = append(ins, prep)
		}
	}
	if egress {
		for j, r := range pol.Spec.Egress {
			rules, err := c.egressRule(name, pol.Namespace, j, r)
			if err != nil {
				c.errs = append(c.errs, fmt.Errorf("egress rule %d: %w (the rule allows nothing)", j, err))
				continue
			}
			egs = append(egs, rules...)
		}
	}
	for _, pod := range selected {
		pr := byPod[pod.Key()]
		if pr == nil {
			pr = &PodRules{Pod: pod.Key(), IPs: slices.Clone(pod.IPs)}
			byPod[pod.Key()] = pr
		}
		pr.Policies = append(pr.Policies, name)
		if ingress {
			if pr.Ingress == nil {
				pr.Ingress = &Direction{}
			}
			pr.Ingress.Policies = append(pr.Ingress.Policies, name)
			for _, in := range ins {
				if rule, ok := ingressRule(name, pod, in.peers, in.none, in.specs); ok {
					rule.PeersID = in.id
					pr.Ingress.Rules = append(pr.Ingress.Rules, rule)
				}
			}
		}
		if egress {
			if pr.Egress == nil {
				pr.Egress = &Direction{}
			}
			pr.Egress.Policies = append(pr.Egress.Policies, name)
			pr.Egress.Rules = append(pr.Egress.Rules, egs...)
		}
	}
}

// peers are a rule's peers: the pods the selectors match and the
// addresses of the ipBlocks; any: the rule names no peer, so every
// address is one.
type peers struct {
	any    bool
	pods   []*Pod
	blocks *netipx.IPSet
}

func (c *compiler) peers(policyNS string, list []networkingv1.NetworkPolicyPeer) (peers, error) {
	if len(list) == 0 {
		return peers{any: true, pods: c.podsWithIPs()}, nil
	}
	var p peers
	var blocks netipx.IPSetBuilder
	seen := map[*Pod]bool{}
	for i, peer := range list {
		if peer.IPBlock != nil {
			s, err := c.cache.block(peer.IPBlock.CIDR, peer.IPBlock.Except, func() (*netipx.IPSet, error) {
				return ipBlock(peer.IPBlock)
			})
			if err != nil {
				return p, fmt.Errorf("peer %d: %w", i, err)
			}
			if len(list) == 1 {
				p.blocks = s // the set itself, without copying it
				return p, nil
			}
			blocks.AddSet(s)
			continue
		}
		if peer.PodSelector == nil && peer.NamespaceSelector == nil {
			return p, fmt.Errorf("peer %d: neither podSelector, namespaceSelector nor ipBlock", i)
		}
		podSel := labels.Everything()
		if peer.PodSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				return p, fmt.Errorf("peer %d: podSelector: %w", i, err)
			}
			podSel = s
		}
		var nsSel labels.Selector
		if peer.NamespaceSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil {
				return p, fmt.Errorf("peer %d: namespaceSelector: %w", i, err)
			}
			nsSel = s
		}
		namespaces := []string{policyNS}
		if nsSel != nil {
			namespaces = namespaces[:0]
			for ns, nsl := range c.nsLabels {
				if nsSel.Matches(nsl) {
					namespaces = append(namespaces, ns)
				}
			}
			slices.Sort(namespaces)
		}
		for _, ns := range namespaces {
			for _, pod := range c.byNS[ns] {
				if !seen[pod] && podSel.Matches(labels.Set(pod.Labels)) {
					seen[pod] = true
					p.pods = append(p.pods, pod)
				}
			}
		}
	}
	s, err := blocks.IPSet()
	if err != nil {
		return p, err
	}
	p.blocks = s
	return p, nil
}

// ipBlock is the set of an ipBlock's CIDR less its excepts.
func ipBlock(blk *networkingv1.IPBlock) (*netipx.IPSet, error) {
	cidr, err := parseCIDR(blk.CIDR)
	if err != nil {
		return nil, fmt.Errorf("ipBlock cidr %q: %w", blk.CIDR, err)
	}
	var b netipx.IPSetBuilder
	b.AddPrefix(cidr)
	for _, e := range blk.Except {
		ex, err := parseCIDR(e)
		if err != nil {
			return nil, fmt.Errorf("ipBlock except %q: %w", e, err)
		}
		b.RemovePrefix(ex)
	}
	s, err := b.IPSet()
	if err != nil {
		return nil, fmt.Errorf("ipBlock: %w", err)
	}
	return s, nil
}

func (c *compiler) podsWithIPs() []*Pod {
	var out []*Pod
	for i := range c.pods {
		if len(c.pods[i].IPs) > 0 {
			out = append(out, &c.pods[i])
		}
	}
	return out
}

// addrs is the set of the pods' addresses and of blocks.
func addrs(pods []*Pod, blocks *netipx.IPSet) (*netipx.IPSet, error) {
	if len(pods) == 0 && blocks != nil {
		return blocks, nil // IPSets are immutable: no copy
	}
	var b netipx.IPSetBuilder
	if blocks != nil {
		b.AddSet(blocks)
	}
	for _, p := range pods {
		for _, ip := range p.IPs {
			b.Add(ip.Unmap())
		}
	}
	return b.IPSet()
}

// portSpec is one policy port: numeric (a range; First 0: every port) or
// named.
type portSpec struct {
	numeric PortRange
	name    string
}

func portSpecs(ports []networkingv1.NetworkPolicyPort) ([]portSpec, error) {
	var out []portSpec
	for i, p := range ports {
		proto := TCP
		if p.Protocol != nil {
			switch *p.Protocol {
			case corev1.ProtocolTCP:
			case corev1.ProtocolUDP:
				proto = UDP
			case corev1.ProtocolSCTP:
				proto = SCTP
			default:
				return nil, fmt.Errorf("port %d: protocol %q", i, *p.Protocol)
			}
		}
		switch {
		case p.Port == nil:
			out = append(out, portSpec{numeric: PortRange{Protocol: proto}})
		case p.Port.Type == intstr.String:
			if p.EndPort != nil {
				return nil, fmt.Errorf("port %d: endPort with the named port %q", i, p.Port.StrVal)
			}
			out = append(out, portSpec{name: p.Port.StrVal, numeric: PortRange{Protocol: proto}})
		default:
			first := p.Port.IntVal
			last := first
			if p.EndPort != nil {
				last = *p.EndPort
			}
			if first < 1 || first > 65535 || last < first || last > 65535 {
				return nil, fmt.Errorf("port %d: %d to %d is not a port range", i, first, last)
			}
			out = append(out, portSpec{numeric: PortRange{Protocol: proto, First: uint16(first), Last: uint16(last)}})
		}
	}
	return out, nil
}

// resolve is the port range of a named port on pod, if it has it.
func resolve(s portSpec, pod *Pod) (PortRange, bool) {
	for _, np := range pod.Ports {
		if np.Name == s.name && np.Protocol == s.numeric.Protocol {
			return PortRange{Protocol: np.Protocol, First: np.Port, Last: np.Port}, true
		}
	}
	return PortRange{}, false
}

// ingressRule is an ingress rule for the selected pod target: its
// peers (nil: any; none: the selectors matched nothing) on its ports,
// named ones resolved on target. ok is false when the rule allows
// nothing.
func ingressRule(policy string, target *Pod, peers *netipx.IPSet, none bool, specs []portSpec) (Rule, bool) {
	if none {
		return Rule{}, false
	}
	rule := Rule{Policy: policy, Peers: peers}
	for _, s := range specs {
		if s.name == "" {
			rule.Ports = append(rule.Ports, s.numeric)
		} else if pr, ok := resolve(s, target); ok {
			rule.Ports = append(rule.Ports, pr)
		}
	}
	if len(specs) > 0 && len(rule.Ports) == 0 {
		return Rule{}, false // named ports the pod does not have: nothing
	}
	return rule, true
}

func (c *compiler) egressRule(policy, ns string, j int, r networkingv1.NetworkPolicyEgressRule) ([]Rule, error) {
	m := c.peerList(ns, r.To)
	pe, err := m.p, m.err
	if err != nil {
		return nil, err
	}
	specs, err := portSpecs(r.Ports)
	if err != nil {
		return nil, err
	}
	var out []Rule
	// The numeric ports (or none at all) go to every peer.
	numeric := Rule{Policy: policy, PeersID: fmt.Sprintf("%s egress %d", policy, j)}
	named := false
	for _, s := range specs {
		if s.name == "" {
			numeric.Ports = append(numeric.Ports, s.numeric)
		} else {
			named = true
		}
	}
	if len(specs) == 0 || len(numeric.Ports) > 0 {
		if !pe.any {
			if numeric.Peers, err = m.addrs(); err != nil {
				return nil, err
			}
		}
		if pe.any || len(numeric.Peers.Ranges()) > 0 {
			out = append(out, numeric)
		}
	}
	if !named {
		return out, nil
	}
	// A named port goes to the peer pods that have it, grouped by what it
	// resolves to.
	type key struct{ r PortRange }
	groups := map[key][]*Pod{}
	var order []key
	for _, s := range specs {
		if s.name == "" {
			continue
		}
		for _, pod := range pe.pods {
			pr, ok := resolve(s, pod)
			if !ok {
				continue
			}
			k := key{pr}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			if !slices.Contains(groups[k], pod) {
				groups[k] = append(groups[k], pod)
			}
		}
	}
	for _, k := range order {
		set, err := addrs(groups[k], nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Rule{Policy: policy, Peers: set, Ports: []PortRange{k.r},
			PeersID: fmt.Sprintf("%s egress %d named port %s", policy, j, k.r)})
	}
	return out, nil
}

// parseCIDR reads a CIDR as the API server validates it (leading zeros
// in IPv4 allowed: k8s.io/utils/net.ParseCIDRSloppy), masked, an
// IPv4-mapped IPv6 prefix as its IPv4 prefix.
func parseCIDR(s string) (netip.Prefix, error) {
	_, n, err := utilnet.ParseCIDRSloppy(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("address of %q", s)
	}
	ones, bits := n.Mask.Size()
	if a.Is4In6() && bits == 128 {
		if ones < 96 {
			return netip.Prefix{}, fmt.Errorf("%q: an IPv4-mapped prefix shorter than ::ffff:0:0/96", s)
		}
		return netip.PrefixFrom(a.Unmap(), ones-96).Masked(), nil
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	return netip.PrefixFrom(a, ones).Masked(), nil
}
