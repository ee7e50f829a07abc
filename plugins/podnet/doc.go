// Package podnet is nri-podnet, a native pod network for NRI: what a node
// network agent would ship instead of exec'ing CNI binaries.
//
// For every pod that is not host-network it allocates one address per
// configured subnet (IPv4, IPv6 or both) from a persistent allocator
// ([github.com/nrinet/nrinet/ipam], a bbolt file), creates a veth pair
// whose pod end is created directly inside the pod's network namespace as
// eth0 (one netlink request: moving an interface between namespaces costs
// tens of milliseconds), enslaves the host end to a Linux bridge whose
// addresses are the subnets' gateways (and, with an IPv6 subnet, the
// link-local fe80::1 without duplicate address detection, so that the node
// can reach a pod from the first moment, also for traffic it forwards from
// other nodes), and configures addresses, default
// routes, lo and the MTU. It returns the typed network (eth0 with its MAC
// and addresses, the routes) from RunPodSandbox, answers PodSandboxStatus
// from its store (and, verbose, checks that eth0 still exists), releases
// the addresses at StopPodSandbox, and at Synchronize (on every join,
// after a restart of the plugin or of the runtime) releases the addresses
// of pods that no longer exist and deletes their host veths, and any other
// host veth of its naming on the bridge that no existing pod owns. A pod
// stopped while the plugin was away that the runtime still lists at
// Synchronize (a kubelet removes a stopped sandbox only at its garbage
// collection) keeps what it holds until its RemovePodSandbox, which gives
// back whatever a pod still holds (StopPodSandbox's teardown, which needs
// no network namespace). It publishes the pods' host ports (below).
//
// # Runtimes
//
// nri-podnet needs a runtime with nrinet's pod network extension
// (nrinetd, or containerd or CRI-O on nrinet in network_mode "nri"). A runtime without it (stock containerd, CRI-O, any runtime
// on containerd/nri v0.12.5) would drop the networks the plugin returns;
// on containerd, whose own CNI setup makes eth0 first, creating the veth
// then fails every pod. cmd/nri-podnet builds its stub with
// [github.com/nrinet/nrinet/plugin.WithRequiredNetworkExtension], and so
// should any program that runs [Plugin]: the stub then refuses such a
// runtime in Configure, before [Plugin.Configure] runs, the runtime never
// takes the plugin in, and Run returns a
// [*github.com/nrinet/nrinet/plugin.NoNetworkExtensionError]; nri-podnet
// prints it and exits with status 3. There is no option to run it on such
// a runtime anyway. [New] with a configuration sets up the bridge and the
// state directory before the plugin connects, and they stay.
//
// # Configuration
//
// JSON, from a file or from the runtime (NN-podnet.conf for a plugin the
// runtime launches):
//
//	{
//	  "bridge":   "nrinet0",
//	  "subnets":  ["198.18.0.0/24", "fd00:198:18::/64"],
//	  "exclude":  ["198.18.0.250/31"],
//	  "gateways": [],
//	  "mtu":      1500,
//	  "stateDir": "/var/lib/nri-podnet",
//	  "noBridgeNetfilter": false,
//	  "noLocalhostHostPorts": false
//	}
//
// Gateways default to the first host of each subnet. The bridge is created
// if missing and reused if present; its MAC address is fixed, derived from
// its name (an existing bridge is given it), so that it does not change
// when the port whose MAC the kernel would otherwise lend it goes away,
// which would leave the pods' neighbour entries for the gateway wrong for
// seconds. The state directory is created with
// mode 0700; an existing one that group or others may access is tightened
// to 0700.
//
// # Host ports
//
// A pod's port mappings with a host port (Kubernetes' hostPort; the pod
// network extension's PodSandbox.port_mappings, from the pod's CRI
// configuration) are published before RunPodSandbox returns, by package
// [github.com/nrinet/nrinet/plugins/podnet/hostport]: DNAT rules in the
// nftables table inet nrinet-podnet-hostport, for TCP, UDP and SCTP, on
// the given host IP or, with none, on every local address of the node in
// each family the pod has an address of. They work for traffic from
// outside the node, from the node itself, from the node's pods and from
// the pod itself (hairpin, masqueraded so that the reply comes back
// through the node). From the node on 127.0.0.1 too, as CRI's port
// mapping and the CNI portmap plugin give it: while any pod has a host
// port, the bridge (and no other interface) has route_localnet on, the
// node's connections from 127.0.0.0/8 are masqueraded to the bridge's
// address, and the CVE-2020-8558 guard drops (and counts) what reaches
// 127.0.0.0/8 or ::1 from any interface but lo, so that the pods still
// cannot reach the node's loopback-only services (see that package,
// "Localhost"); with the last host port, at -uninstall and with
// "noLocalhostHostPorts": true none of it is left, and route_localnet is
// 0. IPv6 has no route_localnet: a connection from ::1 is not supported.
// A pod asking for a host port, protocol and host IP another pod
// holds (an empty host IP overlaps every address of its family) fails
// RunPodSandbox with a [*hostport.ConflictError] naming the port, the
// protocol, the host IP and both pods, and nothing of it is left: no
// addresses, no veth, no rules. StopPodSandbox removes the pod's rules
// before its addresses are released. The mappings are not stored by the
// plugin: the runtime sends them with every pod, in RunPodSandbox and in
// Synchronize (nrinetd persists them with the sandbox; containerd keeps
// the sandbox's CRI configuration), and Synchronize replaces the table
// with the rules of the existing pods that hold addresses, in one
// transaction: after a crash, rules of pods that are gone go, and those of
// live pods are kept or restored.
//
// # Services and bridged traffic
//
// Every pod's bridge port is in hairpin mode, so that a pod reaches itself
// through a Service whose endpoint it is (the service proxy's DNAT sends
// the packet back out of the port it came in on). The bridge's own
// nf_call_iptables and nf_call_ip6tables are turned on (logged when they
// change): with br_netfilter, IPv4 and IPv6 traffic bridged between pods
// then passes netfilter, so that a Service endpoint's reply to a client
// pod on the same bridge, or a host port pod's, is un-NATed, whatever the
// node's net.bridge.bridge-nf-call-iptables and -ip6tables say; other
// bridges of the node are not affected. "noBridgeNetfilter": true leaves
// the bridge's switches as they are.
//
// # Metrics
//
// Given [WithMetrics], the plugin records Prometheus metrics on a
// Registerer of the caller's ([NewMetrics]): addresses in use and free
// per subnet (read from the allocator at each scrape), setup and teardown
// latency, failures by operation, reconciliations by kind, host ports
// published by protocol and family, and pods refused for a host port
// conflict; [Metrics] lists them. cmd/nri-podnet serves them on -http-address.
//
// # With Kubernetes
//
// cmd/nri-podnet -kube takes the subnets from this node's Node object
// (spec.podCIDRs) instead of the configuration, waiting for them before it
// connects to the runtime, and keeps routes to the other nodes' pod CIDRs
// via their InternalIPs (package
// [github.com/nrinet/nrinet/plugins/podnet/kube], routes marked proto 78)
// and, with -cluster-cidr, the masquerade of traffic from the pods to
// outside the cluster (package
// [github.com/nrinet/nrinet/plugins/podnet/masq], nftables table inet
// nrinet-podnet). This package itself knows nothing of Kubernetes: it is
// given a [Config] whose subnets are the pod CIDRs.
//
// # Secondary networks
//
// Given [WithSecondary], a pod also gets, after eth0 and before
// RunPodSandbox returns, the secondary interfaces net1, net2, ... its
// [Secondary] asks for (its prepared ResourceClaims), attached by package
// [github.com/nrinet/nrinet/plugins/podnet/multinet]: all or none, and a
// pod that cannot have them all fails and keeps nothing, eth0 included.
// They are in the pod's network (and PodSandboxStatus) as typed
// interfaces, with the info key [InfoSecondary]; the pod's IPs stay
// eth0's. StopPodSandbox detaches them before it releases eth0's
// addresses, Synchronize detaches those of pods that are gone, and
// RemovePodSandbox those a pod still has (stopped while the plugin was
// away). A pod
// on the host network that asks for one fails. See docs/multinetwork.md.
//
// # Names
//
// The host end of a pod's veth is "nrp" followed by 12 hex digits of a
// hash of the pod ID, and its MAC is derived from the same hash (locally
// administered), so neither needs storing and both survive a restart.
package podnet
