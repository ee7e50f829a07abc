package cniplugin

import (
	"context"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/nrinet/nrinet/api"
)

// minGCVersion is the first CNI spec version with the GC command.
const minGCVersion = "1.1.0"

// Synchronize garbage-collects the network (GC) with the attachments of
// the pods that exist, when the network's cniVersion has GC: libcni runs
// DEL for every cached attachment of a pod that is gone, then GC for each
// plugin, so that IPAM frees leaked addresses. Failures are logged, not
// returned: they must not keep the plugin from joining. The collection is
// bounded by the runtime's request deadline; what it leaves is collected
// at the next join.
func (p *Plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	st, err := p.current()
	if err != nil {
		return nil, err
	}
	list := st.net.List
	if ok, _ := version.GreaterThanOrEqualTo(list.CNIVersion, minGCVersion); !ok {
		p.log.Info("CNI network has no garbage collection (cniVersion < "+minGCVersion+"): stale attachments stay",
			"network", list.Name, "cniVersion", list.CNIVersion)
		return nil, nil
	}
	valid := make([]types.GCAttachment, 0, len(pods))
	for _, pod := range pods {
		if pod.NetNSPath() != "" {
			valid = append(valid, types.GCAttachment{ContainerID: pod.GetId(), IfName: IfName})
		}
	}
	if err := st.cni.GCNetworkList(ctx, list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		p.log.Warn("CNI garbage collection failed", "network", list.Name, "error", err)
		return nil, nil
	}
	p.log.Info("CNI garbage collection done", "network", list.Name, "pods", len(valid))
	return nil, nil
}
