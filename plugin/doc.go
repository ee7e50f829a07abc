// Package plugin is the plugin side of the NRI protocol: the library a node
// agent links to take part in pod and container lifecycle events of a
// container runtime (containerd, CRI-O, or a runtime built on nrinet).
//
// # Writing a plugin
//
// A plugin is any Go value. It implements only the handler interfaces of
// the events it cares about, one small interface per event
// ([RunPodSandboxHandler], [CreateContainerHandler], ...), and [New] derives
// the event subscription from the interfaces it finds. [Stub.Run] connects,
// registers, answers Configure and Synchronize, and serves events until
// the connection ends or the context is cancelled.
//
//	type logger struct{}
//
//	func (logger) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
//		slog.Info("pod started", "pod", pod.GetNamespace()+"/"+pod.GetName(), "sandbox", pod.GetId())
//		return nil
//	}
//
//	s, err := plugin.New(logger{}, plugin.WithPluginName("logger"), plugin.WithPluginIdx("50"))
//	...
//	err = s.Run(ctx)
//
// # Pod networks
//
// A network plugin implements [RunPodSandboxNetworkHandler] instead of
// [RunPodSandboxHandler] and returns its part of the pod's network, may
// implement [PodSandboxStatusHandler], and can push changes with
// [Stub.UpdatePodSandboxNetwork]. This is nrinet's pod network extension:
// against a runtime that does not advertise it in Configure (containerd,
// CRI-O) the plugin runs as a plain NRI plugin by default, logs one
// warning, and the networks it returns are dropped. A plugin whose whole
// job is the pod's network should not run there at all: built with
// [WithRequiredNetworkExtension], it refuses such a runtime in Configure,
// never joins it, and Start and Run return a [*NoNetworkExtensionError]
// (matching [ErrNoNetworkExtension]), which ends Run even with
// [WithReconnect]. The other way round, a plugin built with
// [WithoutNetworkExtension] declines the extension where it is offered and
// is treated as an upstream plugin. See docs/network-contract.md.
//
// # Connecting
//
// A plugin started by the runtime from its plugin directory finds an
// already connected socket on the file descriptor named by NRI_PLUGIN_SOCKET
// and its name and index in NRI_PLUGIN_NAME and NRI_PLUGIN_IDX. Otherwise it
// dials the runtime's socket ([api.DefaultSocketPath] unless
// [WithSocketPath] says otherwise). Explicit options win over the
// environment, and the environment over the executable's "NN-name" file
// name.
//
// # Lifecycle
//
// [Stub.Start] returns once the runtime has configured the plugin.
// [Stub.Wait] returns when the connection ends. [Stub.Run] does both and
// returns when the connection ends, unless the stub was built with
// [WithReconnect]: then Run connects again, with a jittered, capped
// exponential backoff, whenever the connection ends or cannot be made (the
// runtime restarted, its socket is not there yet, it refused the
// registration), and also after the runtime sent Shutdown, which a runtime
// does when it stops itself. Only cancelling Run's context, calling
// [Stub.Stop], or a refusal of a runtime without the pod network extension
// ([WithRequiredNetworkExtension]) ends it. Each new connection registers, is configured and is
// synchronized again, so a plugin's Configure and Synchronize handlers
// must cope with being called more than once. A plugin the runtime
// launched on an inherited socket cannot reconnect: its Run returns when
// that connection ends, and the runtime restarts it.
//
// [WithOnClose] is told why each connection ended. The callback may call
// Stop, which does not wait for it; Wait and Run do. [Stub.Done] is closed
// once the connection ended, without waiting for anything, so the callback
// may wait on it. [Stub.Ready] says whether the plugin is connected to the
// runtime and configured by it right now, and if not why, for a readiness
// probe.
//
// Handlers may be called concurrently (the runtime may run lifecycle
// requests for different pods at once), so plugins guard their own state.
package plugin
