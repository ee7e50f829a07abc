// Package cri is a Kubernetes CRI v1 server for pod sandboxes only: the
// RuntimeService and ImageService of k8s.io/cri-api, on top of a
// [runtime.Runtime] whose NRI plugins provide the pods' networks. It is
// what nrinetd serves to crictl and, for sandboxes, to the kubelet.
//
//	store, err := cri.OpenStore(filepath.Join(stateDir, "sandboxes.db"))
//	rt, err := runtime.New("nrinetd", version,
//		runtime.WithPodNetworkStore(store),
//		runtime.WithSyncFunc(store.SyncPods))
//	srv, err := cri.New(rt, store, cri.WithStateDir(stateDir))
//	err = rt.Start(ctx)
//	go srv.Serve(ctx, listener)
//	...
//	srv.Shutdown(ctx); rt.Stop(ctx); store.Close()
//
// # Sandboxes
//
// A sandbox is a network namespace (none for host-network pods) plus the
// pod's network as the NRI plugins set it up. [Server.RunPodSandbox]
// reserves the sandbox name, creates a named namespace
// (/var/run/netns/nrinet-<first 12 hex digits of the ID>), runs the NRI
// RunPodSandbox hook, persists the sandbox with the merged network record,
// and only then makes it visible: while the hook runs, the sandbox is
// neither listed nor READY. If the hook fails everything is undone and a
// retry with the same configuration succeeds.
//
// [Server.StopPodSandbox] sends NRI StopPodSandbox exactly once per sandbox
// (the fact is persisted), while the namespace still exists, then deletes
// the namespace; the sandbox is NOTREADY and reports no address.
// [Server.RemovePodSandbox] stops if needed, sends NRI RemovePodSandbox and
// forgets the sandbox. Both are idempotent and succeed for unknown IDs.
//
// [Server.PodSandboxStatus] reports ip = ips[0] and additional_ips =
// ips[1:] of the persisted record, refreshed through
// [runtime.Runtime.PodSandboxStatus] for READY sandboxes; a plugin that
// fails never takes addresses away. Verbose, the info map has one key,
// "info", a JSON object with the namespace, each address, interface and
// route with the plugin that set it, DNS, owners and stale plugins.
//
// A pod whose NRI encoding is larger than [api.MaxObjectSize] (labels,
// annotations and the rest count) is refused with InvalidArgument, naming
// its size and the limit, before anything is created: plugins could not
// be sent it again when they join. The server receives CRI requests up to
// [MaxRequestSize], the kubelet's 16 MiB, so that such a pod gets this
// answer rather than a transport error. A full disk or exhausted quota
// under the state directory is ResourceExhausted.
//
// IDs are 64 hex digits; every RPC taking an ID also takes a unique
// prefix, as crictl's 13-digit short IDs need.
//
// # Persistence
//
// The [Store] is a bbolt file. It implements [runtime.PodNetworkStore],
// and [Store.SyncPods] is the [runtime.SyncFunc] that tells joining
// plugins which pods exist, with their addresses. After a restart the
// sandboxes, their states and addresses are as they were; a READY sandbox
// whose namespace vanished (a reboot) is NOTREADY. A namespace file that a
// crash left in /var/run/netns (mounted, or empty after an unmount) is
// deleted if it belongs to a sandbox of the store that is not READY, or
// to one that RunPodSandbox was creating (a marker in the state
// directory says so); no other file there is touched.
//
// # What is not there
//
// There are no containers and no images. ListContainers, ListImages and the
// stats lists answer empty, StopContainer, RemoveContainer and RemoveImage
// succeed, ImageStatus reports no image, ImageFsInfo reports the state
// directory's file system; every other RPC returns codes.Unimplemented.
//
// # Metrics
//
// [WithMetrics] registers Prometheus collectors on a registry the caller
// owns: NRI hook latency and errors per event, CRI requests by method and
// code, sandboxes by state, network readiness and stale plugin parts.
package cri
