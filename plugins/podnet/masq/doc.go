// Package masq masquerades the traffic that leaves a Kubernetes cluster
// from a node's pods, with nftables rules it owns, managed through
// [github.com/google/nftables] (netlink, no nft binary).
//
// Everything it does lives in one table, [TableName] ("nrinet-podnet",
// family inet), with one base chain, [ChainName] ("postrouting": type nat,
// hook postrouting, priority srcnat = 100, policy accept). Nothing outside
// that table is read or changed. For each address family that has both a
// pod CIDR and at least one cluster CIDR, the chain holds, in this order:
//
//   - for every cluster CIDR and pod CIDR of that family (a prefix inside
//     another one is left out): "daddr in it: return", so traffic between
//     pods, on this node or another, keeps its source address;
//   - for every pod CIDR of that family: "saddr in it: counter,
//     masquerade", so traffic from a pod to anywhere else leaves with the
//     address of the node's outgoing interface.
//
// Every rule carries a comment (nft's userdata) saying what it is for;
// `nft list table inet nrinet-podnet` shows them. A family without a
// cluster CIDR gets no rule: not knowing where the cluster ends, the
// package masquerades nothing of it rather than the traffic to other
// nodes' pods.
//
// [Masquerader.Sync] is idempotent: when the chain already holds exactly
// the rules wanted (their comments say which), it changes nothing;
// otherwise it replaces the whole table in one nftables transaction
// (create it if missing, delete it, create it again with its chain and
// rules), so no packet ever sees half a rule set. [Masquerader.Uninstall]
// deletes the table, and is a no-op when it is absent.
//
// A [Masquerader] works in the network namespace of the process, or in the
// one given with [WithNetNS], so that tests can run it in a namespace of
// their own.
package masq
