package hostport

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nftexpr"
)

// Names of what the package owns.
const (
	// TableName is the nftables table (family inet) the package owns.
	TableName = "nrinet-podnet-hostport"
	// The table's base chains.
	ChainPrerouting  = "prerouting"  // type nat, hook prerouting, priority dstnat (-100): DNAT of traffic arriving at the node
	ChainOutput      = "output"      // type nat, hook output, priority dstnat (-100): DNAT of traffic the node sends
	ChainPostrouting = "postrouting" // type nat, hook postrouting, priority srcnat (100): masquerade of a pod's connections to itself and, WithLocalhost, of the node's from 127.0.0.0/8
	ChainGuard       = "guard"       // type filter, hook prerouting, priority raw (-300), WithLocalhost only: the CVE-2020-8558 guard
	// commentPrefix starts the comment of every rule; "pod=ID " follows,
	// or "localhost: " for the rules of WithLocalhost, which are no pod's.
	commentPrefix = "nrinet-podnet-hostport "
	// localhostPrefix starts the comment of the rules of WithLocalhost.
	localhostPrefix = commentPrefix + "localhost: "
)

// maxPodIDLen keeps a rule's comment within nftables' 256 bytes of user
// data, with room for the mapping it describes.
const maxPodIDLen = 128

func table() *nftables.Table {
	return &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
}

// chains returns the table's base chains: with guard (WithLocalhost)
// first the guard, then prerouting, output and postrouting.
func chains(t *nftables.Table, guard bool) []*nftables.Chain {
	accept := nftables.ChainPolicyAccept
	mk := func(name string, typ nftables.ChainType, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: typ, Hooknum: hook, Priority: prio, Policy: &accept}
	}
	var out []*nftables.Chain
	if guard {
		// Before conntrack (-200) and every DNAT (-100): nothing can
		// rewrite or accept such a packet first, and it leaves no
		// conntrack entry.
		out = append(out, mk(ChainGuard, nftables.ChainTypeFilter, nftables.ChainHookPrerouting, nftables.ChainPriorityRaw))
	}
	return append(out,
		mk(ChainPrerouting, nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest),
		mk(ChainOutput, nftables.ChainTypeNAT, nftables.ChainHookOutput, nftables.ChainPriorityNATDest),
		mk(ChainPostrouting, nftables.ChainTypeNAT, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource),
	)
}

// rule is one rule the package writes: its chain, expressions and
// comment.
type rule struct {
	chain   string
	exprs   []expr.Any
	comment string
}

// podRules returns the rules of a pod's binds. For each bind, in
// prerouting and in output (the same rule):
//
//	meta nfproto ipv4 meta l4proto tcp th dport HOSTPORT ip daddr HOSTIP fib daddr type local counter dnat ip to PODADDR:PORT
//	meta nfproto ipv4 meta l4proto tcp th dport HOSTPORT fib daddr type local counter dnat ip to PODADDR:PORT
//
// (the second for every local address; a host IP must be the node's, and
// the fib check guards both), and in postrouting, once per
// address of the pod that a bind targets, the masquerade of the pod's
// own connections that were sent back to it (hairpin), whose replies
// would otherwise never reach the node to be un-NATed:
//
//	meta nfproto ipv4 ip saddr PODADDR ip daddr PODADDR ct status dnat counter masquerade
func podRules(id string, binds []bind) []rule {
	var out []rule
	var hairpin []netip.Addr
	for _, b := range binds {
		dnat := rule{exprs: dnatExprs(b), comment: commentPrefix + "pod=" + id + " " + b.describe()}
		for _, ch := range []string{ChainPrerouting, ChainOutput} {
			dnat.chain = ch
			out = append(out, dnat)
		}
		if !slices.Contains(hairpin, b.addr) {
			hairpin = append(hairpin, b.addr)
		}
	}
	for _, a := range hairpin {
		out = append(out, rule{chain: ChainPostrouting, exprs: hairpinExprs(a),
			comment: commentPrefix + "pod=" + id + " hairpin " + a.String() + " to itself: masquerade"})
	}
	return out
}

// describe says what a bind's DNAT rule does: "tcp *:8080 -> 198.18.0.5:80",
// "udp [fd00::1]:53 -> [fd00:198:18::5]:53".
func (b bind) describe() string {
	host := "*"
	if b.dst.IsValid() {
		host = b.dst.String()
	}
	if b.v6 {
		host = "[" + host + "]"
	}
	return b.m.Protocol.String() + " " + host + ":" + strconv.Itoa(int(b.m.HostPort)) + " -> " +
		netip.AddrPortFrom(b.addr, b.m.ContainerPort).String()
}

// commentPod returns the pod ID a rule comment names, or "" if the
// comment is not one of the package's.
func commentPod(comment string) string {
	rest, ok := strings.CutPrefix(comment, commentPrefix+"pod=")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, " ")
	return id
}

func port(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }

// match returns the expressions of "meta nfproto F meta l4proto P".
func match(v6 bool, p Protocol) []expr.Any {
	return append(nftexpr.Family(v6),
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(p)}},
	)
}

// thPort is "th sport|dport P" (the port fields of TCP, UDP and SCTP sit
// at the same offsets).
func thPort(dst bool, p uint16) []expr.Any {
	off := uint32(0)
	if dst {
		off = 2
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port(p)},
	}
}

// addrIs is "ip[6] saddr|daddr A".
func addrIs(v6, dst bool, a netip.Addr) []expr.Any {
	off, n := nftexpr.AddrField(v6, dst)
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
	}
}

// dnatExprs builds a bind's DNAT rule.
func dnatExprs(b bind) []expr.Any {
	e := append(match(b.v6, b.m.Protocol), thPort(true, b.m.HostPort)...)
	if b.dst.IsValid() {
		e = append(e, addrIs(b.v6, true, b.dst)...)
	}
	// Every DNAT is for the node's own addresses only, as portmap's: a
	// rule whose host IP stopped being local (or never was) takes no
	// connection to another host over.
	e = append(e,
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, unix.RTN_LOCAL)},
	)
	return append(e,
		&expr.Counter{},
		&expr.Immediate{Register: 1, Data: b.addr.AsSlice()},
		&expr.Immediate{Register: 2, Data: port(b.m.ContainerPort)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: uint32(nftexpr.NFProto(b.v6)), RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	)
}

// ipsDstNAT is IPS_DST_NAT of the conntrack status bits.
const ipsDstNAT = 1 << 5

// ctDNAT is "ct status dnat".
func ctDNAT() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ipsDstNAT), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
}

// hairpinExprs builds the masquerade of a pod's connections to itself.
func hairpinExprs(a netip.Addr) []expr.Any {
	e := nftexpr.Family(a.Is6())
	e = append(e, addrIs(a.Is6(), false, a)...)
	e = append(e, addrIs(a.Is6(), true, a)...)
	e = append(e, ctDNAT()...)
	return append(e, &expr.Counter{}, &expr.Masq{})
}

// The loopback networks: 127.0.0.0/8 and ::1.
var (
	loopback4 = netip.MustParsePrefix("127.0.0.0/8")
	loopback6 = netip.MustParsePrefix("::1/128")
)

// localhostRules returns the rules of WithLocalhost(iface), which hold
// while any pod has a host port:
//
//	meta nfproto ipv4 iifname != "lo" ip daddr 127.0.0.0/8 counter drop     (chain guard)
//	meta nfproto ipv6 iifname != "lo" ip6 daddr ::1 counter drop            (chain guard)
//	meta nfproto ipv4 oifname IFACE ip saddr 127.0.0.0/8 ct status dnat counter masquerade  (chain postrouting)
//
// The guard is kube-proxy's answer to CVE-2020-8558: with route_localnet
// on, the kernel would otherwise deliver to the node's loopback-only
// services what a pod sends to 127.0.0.1 through the bridge. The kernel
// drops an IPv6 packet to ::1 that arrives on any interface but lo by
// itself; the guard drops (and counts) the ones br_netfilter shows it
// first. The masquerade gives the node's connections from 127.0.0.0/8,
// DNATed to a pod, the bridge's address as their source, which the pod
// can answer.
func localhostRules(iface string) []rule {
	guard := func(p netip.Prefix) rule {
		v6 := p.Addr().Is6()
		e := append(nftexpr.Family(v6), ifname(expr.MetaKeyIIFNAME, expr.CmpOpNeq, "lo")...)
		e = append(e, prefixIs(true, p)...)
		return rule{chain: ChainGuard, exprs: append(e, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}),
			comment: localhostPrefix + "guard, drop what reaches " + p.String() + " from any interface but lo (CVE-2020-8558)"}
	}
	masq := append(nftexpr.Family(false), ifname(expr.MetaKeyOIFNAME, expr.CmpOpEq, iface)...)
	masq = append(masq, prefixIs(false, loopback4)...)
	masq = append(masq, ctDNAT()...)
	return []rule{
		guard(loopback4),
		guard(loopback6),
		{chain: ChainPostrouting, exprs: append(masq, &expr.Counter{}, &expr.Masq{}),
			comment: localhostPrefix + "masquerade the node's connections from 127.0.0.0/8 to a pod behind " + iface},
	}
}

// ifname is "iifname|oifname op NAME" (key MetaKeyIIFNAME or
// MetaKeyOIFNAME): the name as the kernel compares it, padded with zeros
// to IFNAMSIZ.
func ifname(key expr.MetaKey, op expr.CmpOp, name string) []expr.Any {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: op, Register: 1, Data: b},
	}
}

// prefixIs is "ip[6] saddr|daddr P" (of P's family).
func prefixIs(dst bool, p netip.Prefix) []expr.Any {
	v6 := p.Addr().Is6()
	if p.IsSingleIP() {
		return addrIs(v6, dst, p.Addr())
	}
	off, n := nftexpr.AddrField(v6, dst)
	mask := make([]byte, n)
	for i := range p.Bits() {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

// nftRule makes an nftables rule of r in the table t's chain.
func (r rule) nftRule(t *nftables.Table) *nftables.Rule {
	return &nftables.Rule{
		Table:    t,
		Chain:    &nftables.Chain{Name: r.chain, Table: t},
		Exprs:    r.exprs,
		UserData: userdata.AppendString(nil, userdata.TypeComment, r.comment),
	}
}
