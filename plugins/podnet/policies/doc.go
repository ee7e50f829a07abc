// Package policies is nri-podnet's NetworkPolicy engine: a [Controller]
// keeps the node's NetworkPolicy table (package
// [github.com/nrinet/nrinet/plugins/podnet/netpol]) in step with the
// Kubernetes API and with the node's own pods.
//
// It watches NetworkPolicies, Namespaces and Pods of the whole cluster
// through client-go informers (get, list and watch of the three: the RBAC
// of deploy/base), keeping of Pods and Namespaces only what policies need.
// On every change, and on every change of the node's pods, it compiles
// the whole program and writes the table in one nftables transaction
// (changes that arrive meanwhile are folded into the next write); a
// failed write is retried with backoff and counted (nri-podnet's one
// reconcile runner, package internal/reconcile: client-go's rate-limited
// work queue with a single key).
//
// # When a new pod is covered
//
// The node's pods come from the runtime, not from the API: nri-podnet
// calls [Controller.SetPod] in RunPodSandbox, with the addresses it has
// just given the pod and the sandbox's labels, and SetPod returns only
// once the table in the kernel holds the policies that select the pod and
// its addresses as a peer of the node's other pods. RunPodSandbox returns
// after that, and the runtime starts no container of the pod before it
// does, so policies apply to a pod from its first packet. The API's Pod
// object, once the informer has it (matched by UID), gives the labels
// (which may have changed since the sandbox was made) and the containers'
// named ports. Pods of other nodes are peers from the moment the API
// shows their addresses (status.podIPs); until then a policy allowing
// them does not yet let them in.
//
// nri-podnet joins the runtime once the informers have their lists and
// the policies compile ([Controller.WaitSynced]). The first table is
// written when the runtime's pods are known (its Synchronize, SyncPods):
// until then the table a previous nri-podnet left stays and keeps
// enforcing for the pods that run, so a restart or an upgrade of
// nri-podnet opens no pod even for a moment. [Controller.Ready] is true
// only once that first table is written, and while the last write
// succeeded.
package policies
