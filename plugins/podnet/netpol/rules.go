package netpol

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"go4.org/netipx"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nftexpr"
)

// Names of what the package owns.
const (
	// TableName is the nftables table (family inet) the package owns.
	TableName = "nrinet-podnet-netpol"
	// ChainForward is the table's base chain: type filter, hook forward,
	// priority filter (0), policy accept.
	ChainForward = "forward"
	// commentPrefix starts the comment of every rule.
	commentPrefix = "nrinet-podnet-netpol "
	// maxComment keeps a comment within nftables' 256 bytes of user data.
	maxComment = 250
)

// The verdict maps of the forward chain, by family and direction: a local
// pod's address to a jump to its chain.
const (
	mapEgress4  = "egress-v4"
	mapEgress6  = "egress-v6"
	mapIngress4 = "ingress-v4"
	mapIngress6 = "ingress-v6"
)

func table() *nftables.Table {
	return &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
}

// Conntrack states (ct state bits).
const (
	ctStateEstablished = 1 << 1
	ctStateRelated     = 1 << 2
)

// ruleset is the table's content for a program: what Sync writes in one
// transaction.
type ruleset struct {
	chains []*chainRules
	sets   []setDef
	maps   map[string][]nftables.SetElement
	// counters are the table's named counters, by name: what each
	// counts.
	counters map[string]Count
	// owners are the pods' chains, by name: whose, and which direction
	// (the deny log's prefixes name the chain).
	owners map[string]chainOwner
	// logLimit, with logging on, is the limit object "log-denied"
	// (rate over: it matches the packets over the rate).
	logLimit *expr.Limit
}

// chainOwner is the pod and direction of a chain, and the policies that
// isolate the pod there.
type chainOwner struct {
	Pod, Direction string
	Policies       []string
}

type chainRules struct {
	name  string
	rules []rule
	// k memoises key (a ruleset is compared with the next one too).
	k string
}

// key is the chain's content: equal keys, equal rules.
func (c *chainRules) key() string {
	if c.k != "" {
		return c.k
	}
	var b strings.Builder
	b.WriteString(c.name)
	for _, r := range c.rules {
		b.WriteByte('\n')
		b.WriteString(r.key())
	}
	c.k = b.String()
	return c.k
}

type rule struct {
	exprs   []expr.Any
	comment string
}

// key is the rule's content (its expressions and comment) as text, for
// comparing two programs' rules; the lookups' set IDs are left out (they
// are a transaction's, not the rule's).
func (r rule) key() string {
	var b strings.Builder
	for _, x := range r.exprs {
		if l, ok := x.(*expr.Lookup); ok {
			c := *l
			c.SetID = 0
			x = &c
		}
		fmt.Fprintf(&b, "%T%+v;", x, x)
	}
	b.WriteString(r.comment)
	return b.String()
}

type setDef struct {
	name     string
	v6       bool
	elements []nftables.SetElement
}

// build turns a program into the table's chains, sets and maps:
//
//	chain forward (filter, hook forward, priority 0, policy accept):
//	  ct state established,related accept
//	  meta nfproto ipv6 icmpv6 type 133-137 accept     (neighbour discovery)
//	  meta nfproto ipv4 ip saddr vmap @egress-v4      (pod address: jump eg-ID)
//	  meta nfproto ipv6 ip6 saddr vmap @egress-v6
//	  meta nfproto ipv4 ip daddr vmap @ingress-v4     (pod address: jump in-ID)
//	  meta nfproto ipv6 ip6 daddr vmap @ingress-v6
//	chain eg-ID: ip daddr <the pod's own address> return; per allowed rule and family/port: [ip daddr @set] [meta l4proto P th dport A-B] counter name allowed-eg-P return; then counter name denied-eg-ID drop
//	chain in-ID: ip saddr <the pod's own address> accept; per allowed rule: [ip saddr @set] [port] counter name allowed-in-P accept; then counter name denied-in-ID drop
//
// Named counters count the packets (allowedCounter: one per policy and
// direction, shared by the chains of every pod the policy isolates;
// deniedCounter: one per chain); with ld the drop is preceded by the
// deny log's rules (denyRules).
//
// ID is the pod's chain ID (chainID): the same for a pod from one program
// to the next, so that a change rewrites only what it touches. A packet
// between two pods passes the sender's egress chain (which returns when
// allowed) and then the receiver's ingress chain.
func build(p *Program, ld *LogDenied) (*ruleset, error) {
	rs := &ruleset{maps: map[string][]nftables.SetElement{}, counters: map[string]Count{}, owners: map[string]chainOwner{}}
	if ld != nil {
		rs.logLimit = ld.limit()
		rs.counters[counterUnlogged] = Count{}
	}
	fwd := &chainRules{name: ChainForward}
	fwd.rules = append(fwd.rules, rule{
		exprs: []expr.Any{
			&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
				Mask: binary.NativeEndian.AppendUint32(nil, ctStateEstablished|ctStateRelated), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictAccept},
		},
		comment: commentPrefix + "established and related connections",
	})
	// IPv6 neighbour discovery (router and neighbour solicitations and
	// advertisements, redirects: ICMPv6 types 133 to 137) is IPv6's ARP:
	// not part of any tracked connection, and needed by every allowed
	// one, so no policy may drop it.
	fwd.rules = append(fwd.rules, rule{
		exprs: append(nftexpr.Family(true),
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMPV6}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
			&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{133}, ToData: []byte{137}},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictAccept}),
		comment: commentPrefix + "IPv6 neighbour discovery",
	})
	for _, m := range []struct {
		name   string
		v6, to bool
	}{{mapEgress4, false, false}, {mapEgress6, true, false}, {mapIngress4, false, true}, {mapIngress6, true, true}} {
		off, n := nftexpr.AddrField(m.v6, m.to)
		fwd.rules = append(fwd.rules, rule{
			exprs: []expr.Any{
				&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nftexpr.NFProto(m.v6)}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
				&expr.Lookup{SourceRegister: 1, SetName: m.name, DestRegister: 0, IsDestRegSet: true},
			},
			comment: commentPrefix + "to the chain of the pod: " + m.name,
		})
		rs.maps[m.name] = nil
	}
	rs.chains = append(rs.chains, fwd)

	ids := make(map[string]string, len(p.Pods))
	owner := map[netip.Addr]string{}
	shared := map[string]setDef{} // the sets written, by name
	type peersSets struct {
		peers *netipx.IPSet
		sets  []setDef
	}
	byPeers := map[string]peersSets{} // by PeersID
	for _, pr := range p.Pods {
		id := chainID(pr.Pod)
		if other, ok := ids[id]; ok {
			return nil, fmt.Errorf("netpol: pods %s and %s have the same chain ID %s", other, pr.Pod, id)
		}
		ids[id] = pr.Pod
		for _, ip := range pr.IPs {
			if other, ok := owner[ip.Unmap()]; ok {
				return nil, fmt.Errorf("netpol: pods %s and %s both have the address %s", other, pr.Pod, ip)
			}
			owner[ip.Unmap()] = pr.Pod
		}
		i := id
		for _, d := range []struct {
			dir     *Direction
			ingress bool
		}{{pr.Egress, false}, {pr.Ingress, true}} {
			if d.dir == nil {
				continue
			}
			prefix, what, verdict := "eg-", Egress, expr.VerdictReturn
			if d.ingress {
				prefix, what, verdict = "in-", Ingress, expr.VerdictAccept
			}
			ch := &chainRules{name: prefix + i}
			pod := "pod=" + pr.Pod + " " + what
			isolating := pr.isolating(d.dir)
			rs.owners[ch.name] = chainOwner{Pod: pr.Pod, Direction: what, Policies: isolating}
			// Every policy that isolates the pod here has its allowed
			// counter, its rules or not.
			for _, pol := range isolating {
				rs.counters[allowedCounter(pol, d.ingress)] = Count{Policy: pol, Direction: what}
			}
			// A pod reaching itself (through a Service: hairpin) is not
			// subject to its policies, in either direction: the ingress
			// chain lets its own addresses in, the egress chain lets it
			// send to them.
			for _, ip := range pr.IPs {
				ip = ip.Unmap()
				off, n := nftexpr.AddrField(ip.Is6(), !d.ingress)
				what := " from itself"
				if !d.ingress {
					what = " to itself"
				}
				ch.rules = append(ch.rules, rule{
					exprs: append(nftexpr.Family(ip.Is6()),
						&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
						&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip.AsSlice()},
						&expr.Counter{}, &expr.Verdict{Kind: verdict}),
					comment: commentPrefix + pod + what,
				})
			}
			for j, r := range d.dir.Rules {
				comment := commentPrefix + pod + " allowed by " + r.Policy
				counter := allowedCounter(r.Policy, d.ingress)
				rs.counters[counter] = Count{Policy: r.Policy, Direction: what}
				var rules []rule
				var sets []setDef
				if c, ok := byPeers[r.PeersID]; ok && r.PeersID != "" && c.peers == r.Peers {
					// The peers of this policy rule, computed for another
					// pod it selects: their sets again.
					rules, sets = allowRules("", r, !d.ingress, verdict, counter, comment, c.sets)
				} else {
					setPrefix := fmt.Sprintf("%s%s-%d", prefix, i, j)
					if r.PeersID != "" {
						setPrefix = peersSetPrefix(r.PeersID)
					}
					rules, sets = allowRules(setPrefix, r, !d.ingress, verdict, counter, comment, nil)
					if r.PeersID != "" && !sharable(shared, sets) {
						// Not the peers another pod's rule of that PeersID
						// has: a set of the pod's own.
						rules, sets = allowRules(fmt.Sprintf("%s%s-%d", prefix, i, j), r, !d.ingress, verdict, counter, comment, nil)
					} else if r.PeersID != "" {
						byPeers[r.PeersID] = peersSets{r.Peers, sets}
					}
				}
				ch.rules = append(ch.rules, rules...)
				for _, s := range sets {
					if _, ok := shared[s.name]; !ok {
						shared[s.name] = s
						rs.sets = append(rs.sets, s)
					}
				}
			}
			denied := deniedCounter(ch.name)
			rs.counters[denied] = Count{Pod: pr.Pod, Direction: what}
			ch.rules = append(ch.rules, denyRules(ch.name, denied, commentPrefix+pod+" denied (policies "+strings.Join(isolating, ",")+")", ld)...)
			rs.chains = append(rs.chains, ch)
			for _, ip := range pr.IPs {
				ip = ip.Unmap()
				var m string
				switch {
				case d.ingress && ip.Is4():
					m = mapIngress4
				case d.ingress:
					m = mapIngress6
				case ip.Is4():
					m = mapEgress4
				default:
					m = mapEgress6
				}
				rs.maps[m] = append(rs.maps[m], nftables.SetElement{Key: ip.AsSlice(),
					VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.name}})
			}
		}
	}
	return rs, nil
}

// peersSetPrefix names the sets of the peers of a policy's rule, shared
// by every pod the policy selects: "peers-" and the first 64 bits of the
// SHA-256 of the PeersID, in hex; "-v4" or "-v6" follows.
func peersSetPrefix(peersID string) string {
	sum := sha256.Sum256([]byte(peersID))
	return "peers-" + hex.EncodeToString(sum[:8])
}

// sharable reports whether sets may be the ones of their names written
// already (the same elements), or are new.
func sharable(written map[string]setDef, sets []setDef) bool {
	for _, s := range sets {
		if w, ok := written[s.name]; ok && !slices.EqualFunc(w.elements, s.elements, func(a, b nftables.SetElement) bool {
			return bytes.Equal(a.Key, b.Key) && a.IntervalEnd == b.IntervalEnd
		}) {
			return false
		}
	}
	return true
}

// chainID names a pod's chains and sets: the first 64 bits of the
// SHA-256 of its "namespace/name", in hex. A pod's names stay the same
// while it lives, whatever other pods come and go; the comments name the
// pod.
func chainID(pod string) string {
	sum := sha256.Sum256([]byte(pod))
	return hex.EncodeToString(sum[:8])
}

// allowRules are the rules of one allowed Rule in a pod's chain: per
// family its peers have (both when any), per port range (one when none),
// counted in the named counter counter, with verdict; and the peer sets
// they look up. dst: the peers are the destination (egress). have, if not
// nil, are r's peer sets, computed before: they are looked up and not
// returned again.
func allowRules(setPrefix string, r Rule, dst bool, verdict expr.VerdictKind, counter, comment string, have []setDef) ([]rule, []setDef) {
	var rules []rule
	var sets []setDef
	type fam struct {
		v6  bool
		set string
	}
	var fams []fam
	switch {
	case r.Peers == nil:
		fams = []fam{{v6: false}, {v6: true}}
	case have != nil:
		for _, s := range have {
			fams = append(fams, fam{v6: s.v6, set: s.name})
		}
	default:
		for _, v6 := range []bool{false, true} {
			elems := intervalElements(r.Peers, v6)
			if len(elems) == 0 {
				continue
			}
			name := setPrefix + "-v4"
			if v6 {
				name = setPrefix + "-v6"
			}
			sets = append(sets, setDef{name: name, v6: v6, elements: elems})
			fams = append(fams, fam{v6: v6, set: name})
		}
	}
	ports := r.Ports
	if len(ports) == 0 {
		ports = []PortRange{{}} // every port
	}
	for _, f := range fams {
		for _, pr := range ports {
			var e []expr.Any
			if r.Peers != nil || pr.Protocol != 0 {
				e = nftexpr.Family(f.v6)
			}
			if f.set != "" {
				off, n := nftexpr.AddrField(f.v6, dst)
				e = append(e,
					&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
					&expr.Lookup{SourceRegister: 1, SetName: f.set})
			}
			desc := "any port"
			if pr.Protocol != 0 {
				desc = pr.String()
				e = append(e,
					&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
					&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(pr.Protocol)}})
				if pr.First != 0 {
					e = append(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
					if pr.First == pr.Last {
						e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, pr.First)})
					} else {
						e = append(e, &expr.Range{Op: expr.CmpOpEq, Register: 1,
							FromData: binary.BigEndian.AppendUint16(nil, pr.First), ToData: binary.BigEndian.AppendUint16(nil, pr.Last)})
					}
				}
			}
			peers := "any peer"
			if f.set != "" {
				peers = "@" + f.set
			}
			rules = append(rules, rule{exprs: append(e, countIn(counter), &expr.Verdict{Kind: verdict}), comment: comment + ": " + peers + " " + desc})
		}
	}
	return rules, sets
}

// intervalElements are the elements of an interval set holding s's
// addresses of one family: each range's first address and, flagged as
// the interval's end, the address after its last (none after the
// family's last address).
func intervalElements(s *netipx.IPSet, v6 bool) []nftables.SetElement {
	var out []nftables.SetElement
	for _, r := range s.Ranges() {
		if r.From().Is6() != v6 {
			continue
		}
		out = append(out, nftables.SetElement{Key: r.From().AsSlice()})
		if next := r.To().Next(); next.IsValid() {
			out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
		}
	}
	return out
}

func (r rule) nftRule(t *nftables.Table, chain string) *nftables.Rule {
	return &nftables.Rule{
		Table:    t,
		Chain:    &nftables.Chain{Name: chain, Table: t},
		Exprs:    r.exprs,
		UserData: userdata.AppendString(nil, userdata.TypeComment, shorten(r.comment)),
	}
}

// shorten cuts a comment to maxComment bytes (on a rune boundary, with an
// ellipsis): the kernel refuses a rule's user data over 256 bytes, and
// the comment's length is stored in one byte.
func shorten(c string) string {
	if len(c) <= maxComment {
		return c
	}
	const ell = "..."
	cut := maxComment - len(ell)
	for cut > 0 && !utf8.RuneStart(c[cut]) {
		cut--
	}
	return c[:cut] + ell
}
