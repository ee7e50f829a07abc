// Package multinet attaches secondary interfaces (net1, net2, ...) to pods
// and detaches them: the core of nri-podnet's multi-network through DRA
// (docs/multinetwork.md). It knows netlink and package ipam, and nothing
// of Kubernetes or NRI.
//
// # Networks
//
// A [Config] lists the node's secondary networks, each of a [Kind]:
//
//   - [KindBridge]: a veth pair whose pod end is made directly in the pod
//     as netN and whose host end ("nrm" and 12 hex digits) is a port of
//     the network's own bridge; the bridge (created by [New] if missing)
//     holds the gateway of each subnet.
//   - [KindMacvlan]: a macvlan in bridge mode on a host interface (the
//     master), made directly in the pod as netN.
//   - [KindHost]: a host interface moved into the pod whole and renamed
//     netN; at detach it goes back to the host under its own name, down.
//     One pod at a time has it.
//
// A network with subnets has its own allocator (package ipam, a bbolt
// file in the state directory): each interface gets one address per
// subnet, owned by "OWNER/netN", and the pod a route to each of the
// network's Routes through the gateway of the same family. Bridge and
// macvlan interfaces get a MAC derived from the owner and the name.
//
// # Port security
//
// Each bridge network's bridge has a port security table (package
// portsec, bridge nrinet-podnet-portsec-BRIDGE): an interface's host end
// passes only frames from the interface's MAC and addresses (with IPv6
// the EUI-64 link-local address of its MAC, which the pod's end is made
// to have), no router advertisements, redirects or VLAN tags. Attach
// adds the interface's entry before the veth is made, undo and Detach
// take it out, [New] and [Manager.Sync] make each table hold exactly the
// recorded interfaces, and [Uninstall] removes the tables. A bridge
// network therefore has at most one subnet per family. Macvlan and host
// interfaces are not guarded: their frames pass no port of the host's.
//
// # Attach and detach
//
// [Manager.Attach] gives an owner (a pod sandbox's ID) all the interfaces
// it asks for, or none: a failure undoes every interface of the call and
// returns a [*RequestError] naming the claim and the interface, around an
// [*UnknownNetworkError], an [*ipam.ExhaustedError] (with the network's
// name), a [*HostInterfaceTakenError] (naming the owner that has it) or
// [ErrHostNetwork] (a pod without a network namespace of its own).
// [Manager.Detach] undoes all of an owner's interfaces.
//
// # Restarts
//
// Before it makes the first link, Attach writes the owner's record
// (STATEDIR/attachments/OWNER.json: each interface's network, name, MAC,
// addresses and host name). Detach works from it, also in a new process,
// and removes it last. [Manager.Sync] detaches the owners that are gone
// and releases addresses no record accounts for. A physical host interface
// whose pod's namespace went while nothing detached it is returned to the
// host by the kernel under its in-pod name; Sync finds it by MAC and
// renames it (virtual interfaces such as veths are destroyed with the
// namespace instead, and are then reported as lost).
package multinet
