package portsec

import (
	"encoding/binary"
	"hash/fnv"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// priority is the base chains' priority: before br_netfilter's hooks
// (0), and in prerouting before the bridge learns the frame's source.
const priority = -300

// chainInput is the base chain of frames the bridge delivers to the node
// itself without forwarding them (link-local group addresses such as
// LLDP's): the bridge learns their source after this hook, so they pass
// the same checks.
const chainInput = "input"

// EtherTypes and IP protocol numbers the rules match.
const (
	etherIPv4   = 0x0800
	etherARP    = 0x0806
	etherIPv6   = 0x86dd
	ether8021Q  = 0x8100
	ether8021AD = 0x88a8
	etherQinQ   = 0x9100 // the pre-802.1ad QinQ TPID
	protoICMP   = 1
	protoICMPv6 = 58
)

// ICMP and ICMPv6 types the rules match.
const (
	icmpRedirect       = 5
	icmpRouterAdvert   = 9
	icmp6MLDReport     = 131
	icmp6RouterAdvert  = 134
	icmp6NeighSolicit  = 135
	icmp6NeighAdvert   = 136
	icmp6Redirect      = 137
	icmp6MLDv2Report   = 143
	objectTypeCounter  = unix.NFT_OBJECT_COUNTER
	ifnameKeyBytes     = unix.IFNAMSIZ
	arpEthernetIPv4Hdr = "\x00\x01\x08\x00\x06\x04" // htype 1, ptype IPv4, hlen 6, plen 4
)

// addBase adds the table t, its base chains, the port map and the
// unknown port counter to c's batch, and returns the map. The unknown
// port rule acts on ports of the bridge's interface group only.
func addBase(c *nftables.Conn, t *nftables.Table, bridge, prefix string) *nftables.Set {
	c.AddTable(t)
	accept := nftables.ChainPolicyAccept
	ports := &nftables.Set{Table: t, Name: mapPorts, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict, IsMap: true}
	c.AddSet(ports, nil) // cannot fail: no elements
	c.AddObj(&nftables.CounterObj{Table: t, Name: counterUnknown})
	for _, hook := range []struct {
		name string
		hook *nftables.ChainHook
	}{{ChainPrerouting, nftables.ChainHookPrerouting}, {chainInput, nftables.ChainHookInput}} {
		ch := c.AddChain(&nftables.Chain{Name: hook.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: hook.hook, Priority: nftables.ChainPriorityRef(priority), Policy: &accept})
		// iifname vmap @ports
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append([]expr.Any{},
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Lookup{SourceRegister: 1, SetName: ports.Name, SetID: ports.ID, IsDestRegSet: true, DestRegister: 0},
		)})
		// iifgroup GROUP iifname "PREFIX*" counter name unknown-port drop
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append([]expr.Any{},
			&expr.Meta{Key: expr.MetaKeyIIFGROUP, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, Group(bridge))},
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(prefix)},
			&expr.Objref{Type: objectTypeCounter, Name: counterUnknown},
			&expr.Verdict{Kind: expr.VerdictDrop},
		)})
	}
	return ports
}

// Group is the interface group (IFLA_GROUP, "ip link set dev X group N")
// the host veths of bridge's pods must be in: the unknown port rule of
// bridge's table drops the frames of a port of the group and prefix that
// has no entry, and leaves other bridges' ports to their own tables (this
// kernel has no nft_meta_bridge to match a port's bridge). It is derived
// from the bridge's name, in 1..2^31-1 (0 is the default group, and
// iproute2 takes groups as signed numbers).
func Group(bridge string) uint32 {
	h := fnv.New32a()
	h.Write([]byte("nrinet-podnet-portsec:" + bridge))
	if g := h.Sum32() & 0x7fffffff; g != 0 {
		return g
	}
	return 1
}

// ifnameKey is an interface name as a key of the port map.
func ifnameKey(name string) []byte {
	k := make([]byte, ifnameKeyBytes)
	copy(k, name)
	return k
}

// addPod adds p's chain (named after its interface), its counters and
// its map entry to c's batch; the chain is flushed first, so that a pod
// written again gets its rules once.
func addPod(c *nftables.Conn, ports *nftables.Set, p Port) error {
	t := ports.Table
	ch := c.AddChain(&nftables.Chain{Name: p.Interface, Table: t})
	c.FlushChain(ch)
	for _, r := range Reasons {
		c.AddObj(&nftables.CounterObj{Table: t, Name: counterName(p.Interface, r)})
	}
	for _, exprs := range podRules(p) {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
	}
	return c.SetAddElements(ports, []nftables.SetElement{{
		Key:         ifnameKey(p.Interface),
		VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: p.Interface},
	}})
}

// removePod adds the removal of p's map entry, chain and counters to c's
// batch, in that order (the entry holds a reference to the chain).
func removePod(c *nftables.Conn, t *nftables.Table, p Port) {
	ports := &nftables.Set{Table: t, Name: mapPorts, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict, IsMap: true}
	c.SetDeleteElements(ports, []nftables.SetElement{{Key: ifnameKey(p.Interface)}})
	ch := &nftables.Chain{Name: p.Interface, Table: t}
	c.FlushChain(ch)
	c.DelChain(ch)
	for _, r := range Reasons {
		c.DeleteObject(&nftables.CounterObj{Table: t, Name: counterName(p.Interface, r)})
	}
}

// podRules are the rules of a pod's chain, in order (nft's words):
//
//	ether saddr != MAC counter name IF-mac drop
//	ether type { 8021q, 8021ad, 0x9100 } counter name IF-vlan drop
//	ether type ip meta l4proto icmp icmp type { redirect, router-advertisement } counter name IF-router drop
//	ether type ip6 meta l4proto icmpv6 icmpv6 type { nd-router-advert, nd-redirect } counter name IF-router drop
//	ether type ip6 meta l4proto icmpv6 icmpv6 type nd-neighbor-advert @th,64,128 != { ADDR6, LINKLOCAL } counter name IF-nd drop
//	ether type ip ip saddr ADDR4 accept
//	ether type ip counter name IF-ipv4-source drop
//	ether type arp arp htype 1 arp ptype ip arp hlen 6 arp plen 4 arp saddr ether MAC arp saddr ip ADDR4 accept
//	ether type arp counter name IF-arp drop
//	ether type ip6 ip6 saddr { ADDR6, LINKLOCAL } accept
//	ether type ip6 ip6 saddr :: meta l4proto icmpv6 icmpv6 type { nd-neighbor-solicit, mld-listener-report, mld2-listener-report } accept
//	ether type ip6 counter name IF-ipv6-source drop
//	counter name IF-ethertype drop
//
// A set of several values is one rule per value; the accepts of a family
// the pod has no address of are left out.
func podRules(p Port) [][]expr.Any {
	var v4 netip.Addr
	var v6 []netip.Addr // its address and link-local address
	for _, a := range p.Addrs {
		if a.Is4() {
			v4 = a
		} else {
			v6 = append(v6, a)
		}
	}
	drop := func(r Reason) []expr.Any {
		return []expr.Any{&expr.Objref{Type: objectTypeCounter, Name: counterName(p.Interface, r)}, &expr.Verdict{Kind: expr.VerdictDrop}}
	}
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	var rules [][]expr.Any
	rule := func(parts ...[]expr.Any) {
		var e []expr.Any
		for _, p := range parts {
			e = append(e, p...)
		}
		rules = append(rules, e)
	}
	rule(ll(6, 6), cmp(expr.CmpOpNeq, p.MAC), drop(ReasonMAC))
	for _, tpid := range []uint16{ether8021Q, ether8021AD, etherQinQ} {
		rule(etherType(tpid), drop(ReasonVLAN))
	}
	for _, typ := range []byte{icmpRedirect, icmpRouterAdvert} {
		rule(etherType(etherIPv4), l4proto(protoICMP), icmpType(typ), drop(ReasonRouter))
	}
	for _, typ := range []byte{icmp6RouterAdvert, icmp6Redirect} {
		rule(etherType(etherIPv6), l4proto(protoICMPv6), icmpType(typ), drop(ReasonRouter))
	}
	na := [][]expr.Any{etherType(etherIPv6), l4proto(protoICMPv6), icmpType(icmp6NeighAdvert),
		{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 8, Len: 16}}}
	for _, a := range v6 {
		na = append(na, cmp(expr.CmpOpNeq, a.AsSlice()))
	}
	rule(append(na, drop(ReasonND))...)
	if v4.IsValid() {
		rule(etherType(etherIPv4), nh(12, 4), cmp(expr.CmpOpEq, v4.AsSlice()), []expr.Any{accept})
	}
	rule(etherType(etherIPv4), drop(ReasonIPv4))
	if v4.IsValid() {
		rule(etherType(etherARP), nh(0, 6), cmp(expr.CmpOpEq, []byte(arpEthernetIPv4Hdr)),
			nh(8, 6), cmp(expr.CmpOpEq, p.MAC), nh(14, 4), cmp(expr.CmpOpEq, v4.AsSlice()), []expr.Any{accept})
	}
	rule(etherType(etherARP), drop(ReasonARP))
	for _, a := range v6 {
		rule(etherType(etherIPv6), nh(8, 16), cmp(expr.CmpOpEq, a.AsSlice()), []expr.Any{accept})
	}
	if len(v6) > 0 {
		for _, typ := range []byte{icmp6NeighSolicit, icmp6MLDReport, icmp6MLDv2Report} {
			rule(etherType(etherIPv6), nh(8, 16), cmp(expr.CmpOpEq, make([]byte, 16)), l4proto(protoICMPv6), icmpType(typ), []expr.Any{accept})
		}
	}
	rule(etherType(etherIPv6), drop(ReasonIPv6))
	rule(drop(ReasonEtherType))
	return rules
}

// ll loads n bytes of the link-layer header at off into register 1. In
// the bridge family a VLAN tag the kernel took off the frame is put back
// for the load, so that offset 12 is the outer EtherType, the tag's.
func ll(off, n uint32) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseLLHeader, Offset: off, Len: n}}
}

// nh loads n bytes of the network header at off into register 1.
func nh(off, n uint32) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n}}
}

func cmp(op expr.CmpOp, data []byte) []expr.Any {
	return []expr.Any{&expr.Cmp{Op: op, Register: 1, Data: data}}
}

// etherType is "ether type T".
func etherType(t uint16) []expr.Any {
	return append(ll(12, 2), cmp(expr.CmpOpEq, binary.BigEndian.AppendUint16(nil, t))...)
}

// l4proto is "meta l4proto P".
func l4proto(p byte) []expr.Any {
	return append([]expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}}, cmp(expr.CmpOpEq, []byte{p})...)
}

// icmpType is "icmp type T" or "icmpv6 type T": the transport header's
// first byte.
func icmpType(t byte) []expr.Any {
	return append([]expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1}},
		cmp(expr.CmpOpEq, []byte{t})...)
}
