package podnet

import (
	"context"
	"net/netip"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// The interfaces between nri-podnet's parts that the plugin names. The
// others are declared where they are used, in packages this one cannot
// import (they use Kubernetes' types): policies.Enforcer, which
// netpol.Enforcer is, and kube.Masquerader, which masq.Masquerader is.

// Policies is the node's NetworkPolicy engine, told of the plugin's pods;
// [github.com/nrinet/nrinet/plugins/podnet/policies.Controller] is one.
type Policies interface {
	// SetPod returns once the policies cover the pod in the kernel.
	SetPod(ctx context.Context, pod PolicyPod) error
	RemovePod(id string)
	// SyncPods replaces the pods and returns once the policies cover them.
	SyncPods(ctx context.Context, pods []PolicyPod) error
}

// PolicyPod is a pod of this node with the addresses nri-podnet gave it,
// as the runtime describes it (NRI), for the NetworkPolicy engine: known
// before the API server has its addresses.
type PolicyPod struct {
	// ID is the pod sandbox's ID.
	ID                   string
	Namespace, Name, UID string
	// Labels are the sandbox's labels: the pod's, and the kubelet's own
	// io.kubernetes.pod.* ones.
	Labels map[string]string
	IPs    []netip.Addr
}

// Agent is what every kernel agent of nri-podnet that owns an nftables
// table has alike (masq.Masquerader, netpol.Enforcer, hostport.Mapper,
// portsec.Guard): New(opts ...Option) with WithNetNS, Sync (the whole
// wanted state), Add and Remove(id) for one pod where the agent keeps
// pods, Rules (read back) and these two, which nri-podnet's -uninstall
// calls on each.
type Agent interface {
	// Table names the table the agent owns, e.g. "inet nrinet-podnet".
	Table() string
	// Uninstall removes all the agent owns (its table, and whatever else
	// it changed on the node); an absent table is not an error.
	Uninstall() error
}

// Secondary says which secondary interfaces a pod gets (from its
// prepared ResourceClaims: package
// [github.com/nrinet/nrinet/plugins/podnet/dra]) and hears what became of
// them. Its methods are called with the pod's UID.
type Secondary interface {
	// Requests lists the pod's secondary interfaces, in order: the
	// plugin names them net1, net2, ... in that order. None: the pod has
	// no secondary network.
	Requests(ctx context.Context, pod multinet.Pod) ([]multinet.Request, error)
	// Attached reports the interfaces the pod got, or why it got none
	// (err; then nothing of them is left).
	Attached(ctx context.Context, podUID string, reqs []multinet.Request, itfs []multinet.Interface, err error)
	// Detached reports the interfaces the pod had, now gone.
	Detached(ctx context.Context, podUID string, itfs []multinet.Interface)
}
