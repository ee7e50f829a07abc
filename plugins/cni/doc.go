// Package cni runs a CNI network as an NRI network plugin: it
// attaches pods to a CNI network configuration list with libcni, the way
// containerd and the kubelet do, and reports each pod's network to the
// runtime under nrinet's pod network contract (docs/network-contract.md).
// cmd/nri-cni is its executable.
//
//	h, err := cni.New(ctx, cni.WithLogger(logger))
//	...
//	s, err := plugin.New(h, plugin.WithPluginName("cni"), plugin.WithPluginIdx("10"),
//		plugin.WithRequiredNetworkExtension(),
//		plugin.WithReconnect(0, 0)) // when it dials the runtime's socket
//	...
//	err = s.Run(ctx)
//
// The plugin needs a runtime with nrinet's pod network extension
// (nrinetd, or containerd or CRI-O on nrinet in network_mode "nri"). A runtime without it (stock containerd, CRI-O, any runtime on
// containerd/nri v0.12.5) would drop the networks the plugin returns, and
// attaches pods with its own CNI setup as well. With
// [github.com/nrinet/nrinet/plugin.WithRequiredNetworkExtension], as
// cmd/nri-cni builds its stub, such a runtime is refused in Configure,
// before [Plugin.Configure] runs: the runtime never takes the plugin in,
// no CNI command runs for any pod, and Run returns a
// [*github.com/nrinet/nrinet/plugin.NoNetworkExtensionError]; nri-cni
// prints it and exits with status 3. There is no option to run it on such
// a runtime anyway.
//
// Configure and Synchronize may come more than once (a reconnecting stub
// joins again): Configure loads the network anew each time, and
// Synchronize collects garbage against the pods that exist then.
//
// # Configuration
//
// [Config] is JSON: the runtime passes it in Configure (for a pre-installed
// plugin, the contents of NN-cni.conf), or [WithConfig] gives it from a
// file ([ConfigFromFile]); the plugin's own ([WithConfig]) wins, and a
// configuration the runtime sends beside it is ignored with a log line.
//
//	{"confDir": "/etc/cni/net.d", "binDirs": ["/opt/cni/bin"], "cacheDir": "/var/lib/cni", "network": "",
//	 "useInternalLoopback": false}
//
// [LoadNetwork] picks the network like containerd: the lexically first
// *.conflist, *.conf or *.json file in confDir (a single configuration is
// wrapped into a list), or the first one whose network is named "network".
// Every plugin type must have an executable in binDirs that supports the
// list's cniVersion. Errors say what is wrong and where: a file that does
// not parse is named with the parse error, a missing executable with its
// type and the directories searched, an empty confDir by its path. They
// wrap [ErrInvalidNetworkConfig], [ErrPluginNotFound], [ErrNoNetworkConfig]
// or [ErrNetworkNotFound].
//
// Before each RunPodSandbox the plugin compares the names, sizes and
// modification times of the configuration files with those seen at load
// time, and reloads if they changed. A changed configuration that does not
// load fails the pod, and the plugin keeps the old one until it does.
//
// # Waiting for the network
//
// A network's installer often writes its conflist and plugins after the
// runtime and nri-cni have started. [WaitForNetwork] returns the network
// once it loads, trying again every second ([DefaultWaitInterval],
// [WithWaitInterval]); meanwhile it logs at info level "waiting for a CNI
// network configuration" with the directory, the network if one is named,
// and the reason (no file, a file that does not load, a plugin not
// installed), again whenever the reason changes, and it returns when its
// context ends. cmd/nri-cni started by hand calls it before it connects;
// [New] with [WithConfig] does not wait, and its error then matches
// [IsNetworkLoadError]. A launched nri-cni loads its network in Configure,
// which fails without one: the runtime drops it and launches it again,
// with backoff, until it joins. Either way the plugin is not connected
// meanwhile, so a runtime that requires it
// (runtime.WithRequiredNetworkPlugins, nrinetd's required_network_plugins)
// reports the network not ready (CRI NetworkReady false, "required network
// plugin "cni" not connected") and fails every pod that is not
// host-network, as containerd reports NetworkReady false and fails pods
// until its CNI configuration loads.
//
// # Pods
//
//   - RunPodSandbox, with what containerd v2.4.2 passes (see "What CNI
//     gets" below): STATUS, from cniVersion 1.1.0, to each plugin of the
//     list, whose failure fails the pod before any ADD with an [*OpError]
//     naming the network and the plugin (containerd runs STATUS only for
//     the NetworkReady condition of CRI Status, which the runtime here
//     takes from the plugin being connected); ADD of the loopback network
//     [LoopbackNetwork] on [LoopbackIfName] (or lo set up directly with
//     useInternalLoopback); ADD of the network on [IfName]. The result
//     becomes the pod's network: the interfaces in the pod's netns with
//     their addresses, the pod IPs, routes and DNS, and info [InfoNetwork]
//     and [InfoCNIVersion]. A failed ADD is undone with DEL. Host-network
//     pods are left alone.
//   - StopPodSandbox: DEL of the loopback network, then of the network,
//     each with the configuration and arguments libcni cached at ADD, so
//     that a configuration changed since still tears down what the old
//     one set up. A pod unknown to the cache gets a DEL with the current
//     configuration, which is a no-op for plugins.
//   - PodSandboxStatus: the cached ADD result; verbose also runs CHECK and
//     reports it in info under [InfoCheck].
//   - Synchronize: garbage collection with libcni's GCNetworkList, at every
//     cniVersion, with the pods that exist as the valid attachments: DEL
//     of every cached attachment of a pod that is gone, and from 1.1.0 GC
//     to every plugin. containerd v2.4.2 runs no such collection.
//
// # What CNI gets
//
// For each pod, what containerd v2.4.2 passes (internal/cri/server,
// cniNamespaceOpts; the tests hold nri-cni to it with a recording plugin):
// container ID = the pod's ID; CNI_NETNS = the pod's network namespace
// (the "network" entry of pod.linux.namespaces); CNI_IFNAME eth0 (lo for
// the loopback network); CNI_ARGS IgnoreUnknown=1, K8S_POD_NAMESPACE,
// K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID (the pod's ID) and K8S_POD_UID
// (containerd's order is random; nri-cni's is the kubelet's); and the
// capability arguments, to the plugins that declare them:
//
//   - io.kubernetes.cri.pod-annotations: the pod's annotations, always;
//   - portMappings: the pod's port mappings with a host port (the pod
//     network extension's PodSandbox.port_mappings), as
//     {"HostPort", "ContainerPort", "Protocol" ("tcp", "udp", "sctp"),
//     "HostIP"}, containerd's keys;
//   - bandwidth: from the annotations kubernetes.io/ingress-bandwidth and
//     kubernetes.io/egress-bandwidth (Kubernetes quantities, bits per
//     second, 1k to 1P; otherwise the pod fails, as in containerd), as
//     {"IngressRate", "IngressBurst", "EgressRate", "EgressBurst"}, the
//     bursts math.MaxUint32;
//   - dns: the pod's DNS configuration (the extension's
//     PodSandbox.dns_config), as {"Servers", "Searches", "Options"}, when
//     it has one;
//   - cgroupPath: pod.linux.cgroup_parent, when set.
//
// PodSandbox.port_mappings (field 10001) and dns_config (10002) are the
// CRI configuration's, which NRI does not carry otherwise; nrinetd fills
// them. The runtime library sends them only to plugins that answered
// Configure with the pod network extension, as the plugin library does on
// a runtime that advertises it, and clears them for every other plugin.
//
// # Errors
//
// A failed CNI operation is an [*OpError] that names the network and the
// operation, keeps libcni's description of the failing plugin, and spells
// out the CNI error's code, message and details:
//
//	CNI network "net1" ADD failed: plugin type="bridge" failed (add): code 999: no IP addresses available in range set: 198.18.101.1-198.18.101.2
//
// # Metrics
//
// Given [WithMetrics], the plugin records Prometheus metrics on a
// Registerer of the caller's ([NewMetrics]): setup and teardown latency
// and failures by operation; [Metrics] lists them. cmd/nri-cni serves
// them on -http-address.
//
// # Caveats
//
// The status deadline of the runtime (250 ms by default) bounds a verbose
// PodSandboxStatus, whose CHECK runs every plugin of the list once; a
// runtime that wants CHECK results should allow more. Plugin
// configurations loaded from confDir/<network>/*.conf (libcni's
// non-inlined plugins) are not watched for changes.
package cni
