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

// The chains of a pod's port: the port's own (named after its
// interface), which checks the MAC and goes to the chain of the frame's
// EtherType, and one per EtherType, named with these suffixes.
const (
	suffixIPv4 = "-v4"
	suffixIPv6 = "-v6"
	suffixARP  = "-arp"
)

// podChain is one chain of a pod's port and its rules.
type podChain struct {
	name  string
	rules [][]expr.Any
}

// addPod adds p's chains, its counters and its map entry to c's batch;
// the chains are flushed first, so that a pod written again gets its
// rules once.
func addPod(c *nftables.Conn, ports *nftables.Set, p Port) error {
	t := ports.Table
	chains := podChains(p)
	for _, pc := range chains {
		c.FlushChain(c.AddChain(&nftables.Chain{Name: pc.name, Table: t}))
	}
	for _, r := range Reasons {
		c.AddObj(&nftables.CounterObj{Table: t, Name: counterName(p.Interface, r)})
	}
	for _, pc := range chains {
		ch := &nftables.Chain{Name: pc.name, Table: t}
		for _, exprs := range pc.rules {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
		}
	}
	return c.SetAddElements(ports, []nftables.SetElement{{
		Key:         ifnameKey(p.Interface),
		VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: p.Interface},
	}})
}

// removePod adds the removal of p's map entry, chains and counters to c's
// batch, in that order (the entry refers to the port's chain, and that
// chain to the others: all are flushed before any is deleted).
func removePod(c *nftables.Conn, t *nftables.Table, p Port) {
	ports := &nftables.Set{Table: t, Name: mapPorts, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict, IsMap: true}
	c.SetDeleteElements(ports, []nftables.SetElement{{Key: ifnameKey(p.Interface)}})
	names := []string{p.Interface, p.Interface + suffixIPv4, p.Interface + suffixIPv6, p.Interface + suffixARP}
	for _, n := range names {
		c.FlushChain(&nftables.Chain{Name: n, Table: t})
	}
	for _, n := range names {
		c.DelChain(&nftables.Chain{Name: n, Table: t})
	}
	for _, r := range Reasons {
		c.DeleteObject(&nftables.CounterObj{Table: t, Name: counterName(p.Interface, r)})
	}
}

// podChains are the chains of a pod's port, in nft's words (IF is the
// host veth's name; a set of several values is one rule per value):
//
//	chain IF {
//		ether saddr != MAC counter name IF-mac drop
//		ether type ip goto IF-v4
//		ether type ip6 goto IF-v6
//		ether type arp goto IF-arp
//		ether type { 8021q, 8021ad, 0x9100 } counter name IF-vlan drop
//		counter name IF-ethertype drop
//	}
//	chain IF-v4 {
//		ip saddr ADDR4 meta l4proto { tcp, udp } accept
//		ip saddr != ADDR4 counter name IF-ipv4-source drop
//		icmp type { redirect, router-advertisement } counter name IF-router drop
//		accept
//	}
//	chain IF-v6 {
//		ip6 saddr ADDR6 meta l4proto { tcp, udp } accept
//		icmpv6 type { nd-router-advert, nd-redirect } counter name IF-router drop
//		icmpv6 type nd-neighbor-advert @th,64,128 != { ADDR6, LINKLOCAL } counter name IF-nd drop
//		ip6 saddr { ADDR6, LINKLOCAL } accept
//		ip6 saddr :: icmpv6 type { nd-neighbor-solicit, mld-listener-report, mld2-listener-report } accept
//		counter name IF-ipv6-source drop
//	}
//	chain IF-arp {
//		arp htype 1 arp ptype ip arp hlen 6 arp plen 4 arp saddr ether MAC arp saddr ip ADDR4 accept
//		counter name IF-arp drop
//	}
//
// The most common frames (TCP and UDP from the pod's own address) are
// decided by the third rule they meet. A family the pod has no address of
// is dropped whole.
func podChains(p Port) []podChain {
	var v4, v6 netip.Addr
	var own6 []netip.Addr // its address and link-local address
	for _, a := range p.Addrs {
		switch {
		case a.Is4():
			v4 = a
		case a.IsLinkLocalUnicast():
			own6 = append(own6, a)
		default:
			v6 = a
			own6 = append([]netip.Addr{a}, own6...)
		}
	}
	drop := func(r Reason) []expr.Any {
		return []expr.Any{&expr.Objref{Type: objectTypeCounter, Name: counterName(p.Interface, r)}, &expr.Verdict{Kind: expr.VerdictDrop}}
	}
	accept := []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}
	goTo := func(chain string) []expr.Any { return []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: chain}} }
	rule := func(parts ...[]expr.Any) []expr.Any {
		var e []expr.Any
		for _, p := range parts {
			e = append(e, p...)
		}
		return e
	}

	port := podChain{name: p.Interface}
	port.rules = append(port.rules,
		rule(ll(6, 6), cmp(expr.CmpOpNeq, p.MAC), drop(ReasonMAC)),
		rule(etherType(etherIPv4), goTo(p.Interface+suffixIPv4)),
		rule(etherType(etherIPv6), goTo(p.Interface+suffixIPv6)),
		rule(etherType(etherARP), goTo(p.Interface+suffixARP)))
	for _, tpid := range []uint16{ether8021Q, ether8021AD, etherQinQ} {
		port.rules = append(port.rules, rule(etherType(tpid), drop(ReasonVLAN)))
	}
	port.rules = append(port.rules, drop(ReasonEtherType))

	ip4 := podChain{name: p.Interface + suffixIPv4}
	if v4.IsValid() {
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			ip4.rules = append(ip4.rules, rule(nh(12, 4), cmp(expr.CmpOpEq, v4.AsSlice()), l4proto(proto), accept))
		}
		ip4.rules = append(ip4.rules, rule(nh(12, 4), cmp(expr.CmpOpNeq, v4.AsSlice()), drop(ReasonIPv4)))
		for _, typ := range []byte{icmpRedirect, icmpRouterAdvert} {
			ip4.rules = append(ip4.rules, rule(l4proto(protoICMP), icmpType(typ), drop(ReasonRouter)))
		}
		ip4.rules = append(ip4.rules, accept)
	} else {
		ip4.rules = append(ip4.rules, drop(ReasonIPv4))
	}

	ip6 := podChain{name: p.Interface + suffixIPv6}
	if len(own6) > 0 {
		if v6.IsValid() {
			for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
				ip6.rules = append(ip6.rules, rule(nh(8, 16), cmp(expr.CmpOpEq, v6.AsSlice()), l4proto(proto), accept))
			}
		}
		for _, typ := range []byte{icmp6RouterAdvert, icmp6Redirect} {
			ip6.rules = append(ip6.rules, rule(l4proto(protoICMPv6), icmpType(typ), drop(ReasonRouter)))
		}
		na := rule(l4proto(protoICMPv6), icmpType(icmp6NeighAdvert),
			[]expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 8, Len: 16}})
		for _, a := range own6 {
			na = append(na, cmp(expr.CmpOpNeq, a.AsSlice())...)
		}
		ip6.rules = append(ip6.rules, rule(na, drop(ReasonND)))
		for _, a := range own6 {
			ip6.rules = append(ip6.rules, rule(nh(8, 16), cmp(expr.CmpOpEq, a.AsSlice()), accept))
		}
		for _, typ := range []byte{icmp6NeighSolicit, icmp6MLDReport, icmp6MLDv2Report} {
			ip6.rules = append(ip6.rules, rule(nh(8, 16), cmp(expr.CmpOpEq, make([]byte, 16)), l4proto(protoICMPv6), icmpType(typ), accept))
		}
	}
	ip6.rules = append(ip6.rules, drop(ReasonIPv6))

	arp := podChain{name: p.Interface + suffixARP}
	if v4.IsValid() {
		arp.rules = append(arp.rules, rule(nh(0, 6), cmp(expr.CmpOpEq, []byte(arpEthernetIPv4Hdr)),
			nh(8, 6), cmp(expr.CmpOpEq, p.MAC), nh(14, 4), cmp(expr.CmpOpEq, v4.AsSlice()), accept))
	}
	arp.rules = append(arp.rules, drop(ReasonARP))
	return []podChain{port, ip4, ip6, arp}
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
