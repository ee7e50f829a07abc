// Package runtime is the runtime side of the NRI protocol: the library a
// container runtime embeds so that NRI plugins take part in the lifecycle
// of its pods and containers.
//
// A [Runtime] listens on a unix socket for external plugins, launches the
// pre-installed plugins of a plugin directory, and relays every lifecycle
// event to the plugins subscribed to it, in index order (ties broken by
// name). It speaks the wire protocol of containerd NRI v0.12.5, so plugins
// built on containerd's stub work unmodified, and so do plugins built on
// [github.com/nrinet/nrinet/plugin].
//
//	r, err := runtime.New("my-runtime", "v1.0.0",
//		runtime.WithSyncFunc(listPodsAndContainers),
//		runtime.WithUpdateFunc(applyUpdates),
//		runtime.WithLogger(logger))
//	if err := r.Start(ctx); err != nil { ... }
//	defer r.Stop(ctx)
//	rsp, err := r.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
//
// # Plugins joining
//
// Each connection is admitted on its own goroutine: the plugin must register
// within the registration timeout and answer Configure within the request
// timeout, so a slow or silent plugin never delays another one. A plugin then
// receives the current pods and containers in Synchronize, split into
// chunks that are sized before sending, and joins the dispatch list. A
// plugin joining holds up no request: requests that start meanwhile go on
// without it and queue their events for it, which it receives after its
// Synchronize, so that it sees every pod and container once, in
// Synchronize or as an event (see docs/dev/architecture.md). Pre-installed
// plugins whose process exits are launched again, with backoff
// ([WithRestartBackoff]).
//
// Plugins that did not take the pod network extension in Configure (those
// on upstream's stub, or on this module's with
// [github.com/nrinet/nrinet/plugin.WithoutNetworkExtension]) may share a
// name, as on upstream NRI: each connection joins and gets the events. A
// plugin that took it holds its name alone, since a pod's network parts
// go by plugin name; in exchange a plugin without it has no part in pod
// networks.
//
// # Requests and failures
//
// Every call to a plugin has the request timeout of the Runtime (an option,
// not process-wide state), and returns by it whatever the plugin does: a
// call still stuck sending to a plugin that stopped reading a grace after
// its deadline (a tenth of the timeout, from 250 ms to 1 s) breaks the
// plugin's connection, whatever its failure policy.
// An error a plugin returns fails the request with a [*PluginError] naming
// the plugin and the event. A plugin that times out or whose connection
// breaks is dropped and logged and the request goes on without it, unless
// the plugin asked, through its failure policy, for the request to fail
// instead. Pods and containers larger than [api.MaxObjectSize] are refused
// with an error wrapping [api.ErrTooLarge].
//
// Results of CreateContainer, UpdateContainer and StopContainer are merged
// with per-field ownership by package [github.com/nrinet/nrinet/merge]:
// two plugins setting the same field in one request is a [*ConflictError]
// naming both. A created container's merged adjustment is then validated,
// concurrently, by the plugins subscribed to ValidateContainerAdjustment
// and by the validators built in with [WithValidator] (such as
// [github.com/nrinet/nrinet/validator]); any rejection fails the creation
// with a [*RejectedError] naming the validator and its reason. A built-in
// [PodValidator] also vets every pod before RunPodSandbox, so that required
// plugins gate pods, not only containers.
//
// Evictions plugins ask for, in their answers or through UpdateContainers,
// are handed to the [EvictFunc] of [WithEvictFunc] with the plugin's name
// (containerd's NRI drops them). [github.com/nrinet/nrinet/ocispec]
// applies merged adjustments and updates to an OCI spec.
//
// # Pod networks
//
// [Runtime.RunPodSandbox] returns the pod's network as the plugins set it
// up, merged with an owner per part ([api.PodNetworkRecord]); the runtime
// persists it. [Runtime.PodSandboxStatus] refreshes it from the plugins in
// parallel under a short deadline, keeping the last known part of any
// plugin that fails, and [Runtime.NetworkReady] reports whether the
// required network plugins are connected. Only plugins that took the pod
// network extension contribute: a network from any other is ignored, and
// its UpdatePodSandboxNetwork refused. The rules are in
// docs/network-contract.md.
//
// # Logging
//
// Pass a *slog.Logger with [WithLogger]; every record about a plugin carries
// its name as attribute "plugin".
package runtime
