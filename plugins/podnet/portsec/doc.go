// Package portsec is nri-podnet's port security: it keeps the nftables
// table "bridge nrinet-podnet-portsec-BRIDGE" so that every frame a pod sends
// into the bridge carries the pod's own identity, or is dropped before the
// bridge learns from it, routes it or hands it to netfilter's IP hooks.
//
// # What a pod port accepts
//
// A frame that enters the bridge from a pod's host veth passes only if
//
//   - its Ethernet source is the pod's MAC address (no FDB poisoning, no
//     frames in another pod's name);
//   - it is untagged IPv4, ARP or IPv6: 802.1Q and 802.1ad tagged frames,
//     priority-tagged ones (VLAN ID 0) among them, and every other
//     EtherType are dropped, since br_netfilter hands tagged frames to the
//     IP hooks only with bridge-nf-filter-vlan-tagged, and a policy would
//     never see them;
//   - IPv4 comes from the pod's IPv4 address, and is not an ICMP redirect
//     or router advertisement;
//   - ARP is Ethernet/IPv4 ARP whose sender is the pod's MAC and IPv4
//     address (no gratuitous ARP for another pod's address);
//   - IPv6 comes from the pod's IPv6 address or its link-local address
//     (the unspecified address only for duplicate address detection's
//     neighbour solicitations and MLD reports), is not a router
//     advertisement or a redirect, and a neighbour advertisement names
//     one of the pod's own addresses as its target.
//
// A pod without an address of a family sends nothing of that family. The
// table's base chain (hook prerouting, priority -300, before br_netfilter
// and the bridge's learning) jumps to the pod's chain through a verdict
// map keyed by the interface; a port that has nri-podnet's host veth
// prefix and the bridge's interface group ([Group]) but no entry (being
// set up, or left over) is dropped, so a pod is never unguarded. Ports of
// other names (the node's own, another plugin's) and of other groups pass
// untouched: each bridge has a table of its own, as each nri-podnet has a
// bridge of its own, and each secondary bridge network's bridge (package
// multinet, host veth prefix "nrm") one too. Interfaces that pass no
// bridge port (a secondary macvlan or host interface) cannot be guarded
// here.
//
// Every drop is counted in a named counter per pod and [Reason]
// ([Guard.Drops]); nri-podnet serves them as metrics.
//
// # Writes
//
// [Guard.Add] writes one pod's chain, counters and map entry, and
// [Guard.Remove] takes them out, each in one nftables transaction that
// touches no other pod; the table comes with the first port and goes
// with the last. [Guard.Sync] replaces the whole table in one
// transaction, so that a restart leaves no window in which a live pod's
// port is open. [Guard.Uninstall] deletes the table.
//
// The table is in the bridge family because the checks are about frames
// (MAC addresses, EtherTypes, ARP), which the inet family never sees, and
// one table with a verdict map serves every port, where the netdev family
// would need a base chain per device.
package portsec
