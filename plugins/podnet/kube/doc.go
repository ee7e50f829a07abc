// Package kube makes nri-podnet a Kubernetes cluster network: it takes
// this node's pod CIDRs from its Node object, and keeps routes to the
// other nodes' pod CIDRs, watching all Nodes through a client-go informer
// (list and watch of nodes: the only access it needs). The masquerade of
// traffic leaving the cluster is package
// [github.com/nrinet/nrinet/plugins/podnet/masq]; a [Watcher] keeps it in
// step.
//
// # Pod CIDRs
//
// [Watcher.PodCIDRs] waits until this node's Node has spec.podCIDRs
// (spec.podCIDR when podCIDRs is empty; dual-stack: at most one per
// family) and returns them; nri-podnet waits there, not connected to the
// runtime, so that the runtime reports NetworkReady false and starts no
// pod, and logs why it waits (no Node of that name yet, no pod CIDRs yet).
// [Watcher.Ready] says the same for a readiness probe.
//
// The pod CIDRs are taken once. If the Node's pod CIDRs later change (a
// Node deleted and registered again may get a new range from the
// controller-manager; spec.podCIDRs itself cannot be changed once set),
// are removed, or the Node disappears, the Watcher keeps serving the pod
// CIDRs it took: a running pod's address cannot change, and the bridge,
// the allocator and the masquerade stay consistent with one another. Other
// nodes, which route what the Node object says, send the new range here
// and may no longer route the old one here, so pods of this node can lose
// their traffic from elsewhere: the Watcher logs an error naming the old
// and the new values, and Ready reports false with the same reason, until
// the Node shows the pod CIDRs in use again. Taking the new range means
// draining the node and restarting nri-podnet: its allocator keeps the
// records of pods still there and hands out addresses of the new range
// only.
//
// # Routes
//
// A [Router] keeps, in one network namespace, a route "POD-CIDR via
// INTERNAL-IP" for every other Node's pod CIDR, through that Node's
// InternalIP of the same family (nodes on one L2 network, as kindnet
// assumes). Routes are added, changed and deleted as Nodes are; a pod CIDR
// without an InternalIP of its family, or overlapping this node's or
// another node's, is left out and logged. The Router owns only routes of
// the main table marked with [RouteProtocol] (78, "proto 78" in `ip
// route`): it reads, changes and deletes no other route, and reports a
// wanted destination that someone else's route already has instead of
// replacing it.
//
// When nri-podnet stops (SIGTERM, SIGINT), routes, masquerade and
// forwarding stay, so that pods keep their connectivity across a restart or
// an upgrade of the DaemonSet. [Router.Uninstall] deletes the routes; the
// command's -uninstall flag removes routes, the masquerade table, the host
// port table (package [github.com/nrinet/nrinet/plugins/podnet/hostport])
// and the bridge.
//
// # Forwarding
//
// With [WithForwarding], the Watcher turns on net.ipv4.ip_forward and
// net.ipv6.conf.all.forwarding (for the families of the pod CIDRs) in the
// process's network namespace when they are off, and never turns them off.
// Note that IPv6 forwarding makes the kernel ignore router advertisements
// on interfaces with accept_ra=1.
//
// # Reconcile
//
// On every Node event, [WithResyncPeriod] after the last round and,
// after a failure, sooner (1 s doubling up to the period), the Watcher
// (on nri-podnet's one reconcile runner, package internal/reconcile)
// reads the whole Node list from the informer's cache and reconciles
// routes, masquerade and forwarding from it: level-triggered, so a missed
// event or a route deleted by hand is repaired at the next round. Nothing is reconciled
// before the informer has the full list, so a starting Watcher never
// deletes routes of Nodes it has not seen yet.
package kube
