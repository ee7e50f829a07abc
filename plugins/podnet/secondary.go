package podnet

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// InfoSecondary is the info key that lists, for each secondary interface
// of the pod, "netN=NETWORK" (comma-separated).
const InfoSecondary = "podnet.nrinet.io/secondary"

// attachSecondary gives the pod the secondary interfaces it asks for (see
// [WithSecondary]), named net1, net2, ... in order; all or none.
func (p *Plugin) attachSecondary(ctx context.Context, pod *api.PodSandbox) ([]multinet.Interface, error) {
	if p.multinet == nil {
		return nil, nil
	}
	who := multinet.Pod{Namespace: pod.GetNamespace(), Name: pod.GetName(), UID: pod.GetUid()}
	reqs, err := p.secondary.Requests(ctx, who)
	if err != nil {
		return nil, fmt.Errorf("secondary networks: %w", err)
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	for i := range reqs {
		reqs[i].IfName = "net" + strconv.Itoa(i+1)
	}
	itfs, err := p.multinet.Attach(ctx, pod.GetId(), who, pod.NetNSPath(), reqs)
	p.secondary.Attached(ctx, pod.GetUid(), reqs, itfs, err)
	if err != nil {
		return nil, fmt.Errorf("secondary networks: %w", err)
	}
	p.log.Debug("secondary interfaces attached", "pod", podName(pod), "sandbox", pod.GetId(), "interfaces", len(itfs))
	return itfs, nil
}

// refuseHostNetwork fails a pod on the host network that asks for
// secondary interfaces (and reports it as a failed attach).
func (p *Plugin) refuseHostNetwork(ctx context.Context, pod *api.PodSandbox) error {
	if p.multinet == nil {
		return nil
	}
	who := multinet.Pod{Namespace: pod.GetNamespace(), Name: pod.GetName(), UID: pod.GetUid()}
	reqs, err := p.secondary.Requests(ctx, who)
	if err != nil || len(reqs) == 0 {
		return err
	}
	for i := range reqs {
		reqs[i].IfName = "net" + strconv.Itoa(i+1)
	}
	_, err = p.multinet.Attach(ctx, pod.GetId(), who, "", reqs)
	p.secondary.Attached(ctx, pod.GetUid(), reqs, nil, err)
	return fmt.Errorf("podnet: pod %s/%s: secondary networks: %w", pod.GetNamespace(), pod.GetName(), err)
}

// detachSecondary takes the pod's secondary interfaces away.
func (p *Plugin) detachSecondary(ctx context.Context, pod *api.PodSandbox) error {
	if p.multinet == nil {
		return nil
	}
	itfs, err := p.multinet.Interfaces(pod.GetId())
	if err == nil && len(itfs) > 0 {
		err = p.multinet.Detach(ctx, pod.GetId(), pod.NetNSPath())
	}
	if err != nil {
		return fmt.Errorf("podnet: pod %s/%s: secondary networks: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	if len(itfs) > 0 {
		p.secondary.Detached(ctx, pod.GetUid(), itfs)
	}
	return nil
}

// addSecondary adds the secondary interfaces to the pod's network: typed
// interfaces, and the info key; the pod's IPs stay eth0's.
func addSecondary(n *api.PodSandboxNetwork, itfs []multinet.Interface) {
	if len(itfs) == 0 {
		return
	}
	var names string
	for i, itf := range itfs {
		ai := &api.NetworkInterface{Name: itf.Name, Mac: itf.MAC, Mtu: uint32(itf.MTU)}
		for _, a := range itf.Addrs {
			ai.Addresses = append(ai.Addresses, a.String())
		}
		n.Interfaces = append(n.Interfaces, ai)
		if i > 0 {
			names += ","
		}
		names += itf.Name + "=" + itf.Network
	}
	n.Info[InfoSecondary] = names
}
