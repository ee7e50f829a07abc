package netpol

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Flow is a new connection (its first packet) to explain: from Src to
// Dst on Protocol and Port.
type Flow struct {
	Src, Dst netip.Addr
	Protocol Protocol
	Port     uint16
}

func (f Flow) String() string {
	return fmt.Sprintf("%s -> %s %s/%d", f.Src, f.Dst, f.Protocol, f.Port)
}

// Verdict is what one direction's chain decides for a flow.
type Verdict struct {
	// Pod is the local pod whose chain decides ("namespace/name"), ""
	// when the address is no isolated pod of this node: then the
	// direction allows everything.
	Pod string
	// Policies are the policies that isolate the pod in the direction.
	Policies []string
	// AllowedBy are the policies whose rules allow the flow; Self is set
	// when the flow is the pod's to or from itself, which its policies
	// never deny.
	AllowedBy []string
	Self      bool
	// Oversized are the policies that isolate the pod and were left out
	// for their size: they allow nothing.
	Oversized []string
}

// Allowed reports whether the direction lets the flow through.
func (v Verdict) Allowed() bool { return v.Pod == "" || v.Self || len(v.AllowedBy) > 0 }

// Explanation is why the table allows or denies a flow: the egress chain
// of the pod that sends it and the ingress chain of the pod that
// receives it, both on this node's table, must allow it.
type Explanation struct {
	Flow            Flow
	Egress, Ingress Verdict
}

// Allowed reports whether the flow passes both directions.
func (e Explanation) Allowed() bool { return e.Egress.Allowed() && e.Ingress.Allowed() }

// String says it in one line, e.g. "allowed: egress of prod/a not
// isolated; ingress of prod/b allowed by prod/b-from-a", "denied: ingress
// of prod/b: no policy allows it (isolated by prod/deny)".
func (e Explanation) String() string {
	word := "denied"
	if e.Allowed() {
		word = "allowed"
	}
	return word + ": " + e.Egress.describe("egress", e.Flow.Src) + "; " + e.Ingress.describe("ingress", e.Flow.Dst)
}

func (v Verdict) describe(dir string, addr netip.Addr) string {
	switch {
	case v.Pod == "":
		return fmt.Sprintf("%s of %s not isolated (no policy of this node's pods selects it)", dir, addr)
	case v.Self:
		return fmt.Sprintf("%s of %s allowed (the pod itself)", dir, v.Pod)
	case len(v.AllowedBy) > 0:
		return fmt.Sprintf("%s of %s allowed by %s", dir, v.Pod, strings.Join(v.AllowedBy, ", "))
	}
	s := fmt.Sprintf("%s of %s: no policy allows it (isolated by %s)", dir, v.Pod, strings.Join(v.Policies, ", "))
	if len(v.Oversized) > 0 {
		s += "; too big to enforce, allowing nothing: " + strings.Join(v.Oversized, ", ")
	}
	return s
}

// Explain says which policies allow or deny f, as the table the program
// compiles to decides a connection's first packet through the node's
// forward hook: between pods of the node, and to or from other nodes and
// outside. It does not know the node's own addresses (traffic between a
// pod and its node is never filtered), connections already established
// (allowed whatever changed since), nor IPv6 neighbour discovery (always
// allowed).
func (p *Program) Explain(f Flow) Explanation {
	f.Src, f.Dst = f.Src.Unmap(), f.Dst.Unmap()
	e := Explanation{Flow: f}
	for _, pr := range p.Pods {
		if pr.Egress != nil && slices.Contains(unmapped(pr.IPs), f.Src) {
			e.Egress = p.verdict(pr, pr.Egress, f, f.Dst, slices.Contains(unmapped(pr.IPs), f.Dst))
		}
		if pr.Ingress != nil && slices.Contains(unmapped(pr.IPs), f.Dst) {
			e.Ingress = p.verdict(pr, pr.Ingress, f, f.Src, slices.Contains(unmapped(pr.IPs), f.Src))
		}
	}
	return e
}

func unmapped(ips []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, len(ips))
	for i, a := range ips {
		out[i] = a.Unmap()
	}
	return out
}

// verdict is what pr's chain of direction d decides for f, whose other
// end (the peer) is peer; self: the peer is the pod itself.
func (p *Program) verdict(pr PodRules, d *Direction, f Flow, peer netip.Addr, self bool) Verdict {
	v := Verdict{Pod: pr.Pod, Policies: pr.isolating(d), Self: self}
	for _, r := range d.Rules {
		if r.allows(peer, f.Protocol, f.Port) && !slices.Contains(v.AllowedBy, r.Policy) {
			v.AllowedBy = append(v.AllowedBy, r.Policy)
		}
	}
	for _, o := range p.Oversized {
		if slices.Contains(v.Policies, o.Policy) {
			v.Oversized = append(v.Oversized, o.Policy)
		}
	}
	return v
}

// allows reports whether the rule lets peer through on proto and port.
func (r Rule) allows(peer netip.Addr, proto Protocol, port uint16) bool {
	if r.Peers != nil && !r.Peers.Contains(peer) {
		return false
	}
	if len(r.Ports) == 0 {
		return true
	}
	for _, pr := range r.Ports {
		if pr.Protocol == proto && (pr.First == 0 || pr.First <= port && port <= pr.Last) {
			return true
		}
	}
	return false
}

// isolating are the policies that isolate pr in direction d: d's
// Policies, or all of pr's for a program built without them.
func (pr PodRules) isolating(d *Direction) []string {
	if len(d.Policies) > 0 {
		return d.Policies
	}
	return pr.Policies
}
