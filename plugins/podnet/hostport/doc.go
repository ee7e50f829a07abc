// Package hostport publishes pods' ports on the node (Kubernetes'
// hostPort, CRI's PortMapping) with nftables rules it owns, managed
// through [github.com/google/nftables] (netlink, no nft binary).
//
// # Table
//
// Everything lives in one table, [TableName] ("nrinet-podnet-hostport",
// family inet), apart from the masquerade table of package
// [github.com/nrinet/nrinet/plugins/podnet/masq], whose Sync replaces its
// whole table. Its base chains, all with policy accept:
//
//   - [ChainGuard] (type filter, hook prerouting, priority raw, -300),
//     with [WithLocalhost] only: the CVE-2020-8558 guard (see Localhost,
//     below);
//   - [ChainPrerouting] (type nat, hook prerouting, priority dstnat,
//     -100): traffic that reaches the node from outside or from its pods;
//   - [ChainOutput] (type nat, hook output, priority dstnat): traffic the
//     node itself sends;
//   - [ChainPostrouting] (type nat, hook postrouting, priority srcnat,
//     100).
//
// For every mapping with a host port, per family it is published in,
// prerouting and output hold the same rule:
//
//	meta nfproto ipv4 meta l4proto tcp th dport 54323 ip daddr 127.0.0.1 fib daddr type local counter dnat ip to 198.18.1.5:8080
//	meta nfproto ipv6 meta l4proto udp th dport 5353 fib daddr type local counter dnat ip6 to [fd00:198:18:1::5]:53
//
// the first for a host IP, the second for every local address of the node
// (an empty host IP). Postrouting holds, per pod address a mapping
// targets, the masquerade of the pod's connections to itself through a
// host port (hairpin): without it the pod would answer itself directly
// and the reply would never be un-NATed.
//
//	meta nfproto ipv4 ip saddr 198.18.1.5 ip daddr 198.18.1.5 ct status dnat counter masquerade
//
// Every rule carries a comment (nft's userdata) that starts with
// "nrinet-podnet-hostport pod=ID" (or "nrinet-podnet-hostport localhost"
// for the rules of [WithLocalhost], which are no pod's) and says what it
// does; `nft list table inet nrinet-podnet-hostport` shows them, and
// [Mapper.Rules] reads them back with their counters. Nothing outside the
// table is read or changed, but route_localnet of the interface given
// with [WithLocalhost].
//
// # Host IPs
//
// An empty host IP (the zero [netip.Addr]) publishes the port on every
// local address of the node (fib daddr type local), in every family the
// pod has an address of: both for a dual-stack pod. 0.0.0.0 and :: do so
// for their family only. Any other address publishes the port on that
// destination only, and so only in its family; a host IP of a family the
// pod has no address of is an error ([ErrInvalidMapping]).
//
// Every host IP must be one of the node's addresses ([ErrNotLocal]), and
// every DNAT rule checks that the destination is local (fib daddr type
// local), as portmap's do. A host IP of 127.0.0.1 is local on a node whose
// lo is up.
//
// # Localhost
//
// A connection the node makes from 127.0.0.1 to 127.0.0.1:HOSTPORT, as
// CRI's port mapping check and the CNI portmap plugin expect (critest's
// "runtime should support port mapping with host port and container
// port"), needs three things besides the DNAT, which [WithLocalhost]
// keeps while any pod has a host port:
//
//   - route_localnet on the interface the pods are behind (nri-podnet's
//     bridge, and no other): the kernel otherwise drops a packet with a
//     loopback source that is routed out of another interface, and its
//     reply;
//   - the masquerade of those connections to that interface's address
//     (the pods' gateway), so that the pod answers to an address it can
//     reach: meta nfproto ipv4 oifname IFACE ip saddr 127.0.0.0/8 ct
//     status dnat counter masquerade;
//   - the guard: route_localnet alone would let a pod reach the node's
//     services that listen on 127.0.0.1 only, by sending to 127.0.0.1
//     through the bridge (CVE-2020-8558). The chain [ChainGuard], at
//     priority raw (before conntrack and any DNAT, so that no rule can
//     rewrite or accept such a packet first), drops and counts what
//     reaches 127.0.0.0/8 or ::1 from any interface but lo, as kube-proxy
//     does: iifname != "lo" ip daddr 127.0.0.0/8 counter drop. The
//     replies of the node's own connections pass: before the NAT hook
//     they are addressed to the gateway.
//
// The guard is written before route_localnet is turned on, and
// route_localnet turned off before the guard goes (with the last host
// port, at [Mapper.Uninstall]): never one without the other. The guard
// drops for the whole node, not only for the bridge: a packet to
// 127.0.0.0/8 that comes in on any other interface is a martian the
// kernel would drop anyway.
//
// IPv6 has no route_localnet: the kernel drops a packet with the source
// ::1 that would leave through another interface than lo, so a connection
// from ::1 to a host port is not supported, with or without the option.
// Without the option the package changes no sysctl, writes neither guard
// nor masquerade, and a connection from 127.0.0.1 is not supported either.
//
// What reaches a host port, from where:
//
//	from                                   | WithLocalhost | without
//	the node, 127.0.0.1 -> 127.0.0.1:PORT   | yes           | no (dropped by the kernel)
//	the node, NODE-IP -> 127.0.0.1:PORT     | yes           | yes (curl --interface NODE-IP)
//	the node, to its own addresses          | yes           | yes
//	the node, ::1 -> [::1]:PORT             | no            | no (IPv6 has no route_localnet)
//	other pods, to the node's addresses     | yes           | yes
//	other pods, to 127.0.0.1 (or ::1)       | no: dropped and counted by the guard | no: the kernel drops it
//	the pod itself (hairpin)                | yes           | yes
//	outside the node, to its addresses      | yes           | yes
//
// # Conflicts
//
// Two mappings collide when they have the same protocol and host port, a
// family in common and the same host IP or an empty (or unspecified) one.
// [Mapper.Add] refuses a pod whose mapping collides with one another pod
// holds with a [*ConflictError] (matching [ErrConflict]) that names both
// pods and both mappings, and writes nothing. A pod whose own mappings
// collide is an [ErrInvalidMapping].
//
// # Transactions
//
// [Mapper.Add] writes a pod's rules in one nftables transaction, which
// also creates the table and chains if they are missing and takes out the
// rules the pod had: adding a pod again replaces its rules (idempotent),
// and no packet sees half of them. [Mapper.Remove] takes them out in one
// transaction, and the last pod's removal deletes the table.
// [Mapper.Sync] replaces the whole table in one transaction with the
// rules of the pods it is given (or deletes it when none has a host
// port): after a restart, rules of pods that are gone are taken out and
// those of live pods kept or restored, and with them the guard, the
// masquerade and route_localnet of [WithLocalhost]. [Mapper.Uninstall]
// turns route_localnet off and deletes the table. The writes of the
// table are one at a time.
//
// A pod without host ports costs nothing: no nftables call is made for
// it, and no table is created. The Mapper remembers what each pod holds in memory only; the
// mappings come from the runtime (the pod's CRI configuration) at every
// Add and, after a restart, at Sync.
//
// # Clients on the same bridge
//
// A client pod on the node's bridge that reaches another pod of that
// bridge through a host port gets its reply bridged, not routed: the
// kernel un-NATs it only if bridged traffic passes netfilter
// (br_netfilter, with the bridge's nf_call_iptables and nf_call_ip6tables
// or the node's net.bridge.bridge-nf-call-iptables and -ip6tables).
// nri-podnet turns the bridge's on; see package
// [github.com/nrinet/nrinet/plugins/podnet].
//
// A [Mapper] works in the network namespace of the process, or in the one
// given with [WithNetNS], so that tests can run it in a namespace of their
// own.
package hostport
