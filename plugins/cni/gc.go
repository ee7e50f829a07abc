package cni

import (
	"context"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/nrinet/nrinet/api"
)

// minGCVersion is the first CNI spec version with the GC command.
const minGCVersion = "1.1.0"

// Synchronize garbage-collects the loopback network and the pod's network
// with libcni's GCNetworkList, with the attachments of the pods that
// exist (those with a network namespace, on LoopbackIfName and IfName) as
// the valid ones. At every cniVersion libcni runs DEL, with the cached
// arguments, for each attachment in its cache of a pod that is gone; from
// cniVersion 1.1.0 it then sends GC to every plugin of the list, so that
// IPAM frees what it leaked without a cache entry. (containerd itself
// never runs GC.) Failures are logged, not returned: they must not keep
// the plugin from joining. The collection is bounded by the runtime's
// request deadline; what it leaves is collected at the next join.
func (p *Plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, _ []*api.Container) (_ []*api.ContainerUpdate, err error) {
	defer p.metrics.observe(OpSync, time.Now(), &err)
	st, err := p.current()
	if err != nil {
		return nil, err
	}
	lists := []*libcni.NetworkConfigList{st.net.List}
	ifNames := []string{IfName}
	if lo := st.net.Loopback; lo != nil {
		lists = append([]*libcni.NetworkConfigList{lo}, lists...)
		ifNames = append([]string{LoopbackIfName}, ifNames...)
	}
	for i, list := range lists {
		valid := make([]types.GCAttachment, 0, len(pods))
		for _, pod := range pods {
			if pod.NetNSPath() != "" {
				valid = append(valid, types.GCAttachment{ContainerID: pod.GetId(), IfName: ifNames[i]})
			}
		}
		if err := st.cni.GCNetworkList(ctx, list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
			p.log.Warn("CNI garbage collection failed", "network", list.Name, "error", err)
			p.metrics.failed(OpSync)
			continue
		}
		gc, _ := version.GreaterThanOrEqualTo(list.CNIVersion, minGCVersion)
		p.log.Info("CNI garbage collection done", "network", list.Name, "cniVersion", list.CNIVersion,
			"pods", len(valid), "pluginGC", gc)
	}
	return nil, nil
}
