// Package hostport publishes pods' ports on the node (Kubernetes'
// hostPort, CRI's PortMapping) with nftables rules it owns, managed
// through [github.com/google/nftables] (netlink, no nft binary).
//
// # Table
//
// Everything lives in one table, [TableName] ("nrinet-podnet-hostport",
// family inet), apart from the masquerade table of package
// [github.com/nrinet/nrinet/plugins/podnet/masq], whose Sync replaces its
// whole table. Its three base chains, all type nat with policy accept:
//
//   - [ChainPrerouting] (hook prerouting, priority dstnat, -100): traffic
//     that reaches the node from outside or from its pods;
//   - [ChainOutput] (hook output, priority dstnat): traffic the node
//     itself sends;
//   - [ChainPostrouting] (hook postrouting, priority srcnat, 100).
//
// For every mapping with a host port, per family it is published in,
// prerouting and output hold the same rule:
//
//	meta nfproto ipv4 meta l4proto tcp th dport 54323 ip daddr 127.0.0.1 counter dnat ip to 198.18.1.5:8080
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
// "nrinet-podnet-hostport pod=ID" and says what it does; `nft list table
// inet nrinet-podnet-hostport` shows them, and [Mapper.Rules] reads them
// back. Nothing outside the table is read or changed.
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
// A host IP of 127.0.0.1 works for clients on the node whose source
// address is not a loopback one, as with `curl --interface NODE-IP
// http://127.0.0.1:PORT`: the destination is rewritten to the pod in the
// output hook and the packet leaves through the pod network. A connection
// from 127.0.0.1 itself is not supported: the kernel drops packets with a
// loopback source on any other interface unless route_localnet is on, and
// turning route_localnet on lets the node's pods reach services that
// listen on its loopback addresses only (CVE-2020-8558), so the package
// leaves it off. IPv6 has no route_localnet: a connection from ::1 is not
// supported either.
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
// transaction. [Mapper.Sync] replaces the whole table in one transaction
// with the rules of the pods it is given (or deletes it when none has a
// host port): after a restart, rules of pods that are gone are taken out
// and those of live pods kept or restored. [Mapper.Uninstall] deletes the
// table.
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
