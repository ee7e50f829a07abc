package cniplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/containernetworking/cni/libcni"

	"github.com/nrinet/nrinet/api"
)

// IfName is the name of the pod's interface that the CNI network creates.
const IfName = "eth0"

// cleanupTimeout bounds the DEL that undoes a failed ADD, which runs even
// when the request's own deadline has passed.
const cleanupTimeout = 30 * time.Second

// RunPodSandboxNetwork attaches the pod to the CNI network (ADD) and
// returns the pod's network from the result. Host-network pods are left
// alone. The network configuration is reloaded first if its directory
// changed. If ADD fails, a DEL undoes what the plugins before the failing
// one did, and the error is an *OpError.
func (p *Plugin) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	netns := pod.NetNSPath()
	if netns == "" {
		return nil, nil
	}
	if _, err := os.Stat(netns); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pod %s: network namespace %s does not exist", podRef(pod), netns)
		}
		return nil, fmt.Errorf("pod %s: network namespace: %w", podRef(pod), err)
	}
	st, err := p.refresh(ctx)
	if err != nil {
		return nil, err
	}
	list := st.net.List
	rt := runtimeConf(pod, netns)
	res, err := st.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		err = &OpError{Network: list.Name, Op: "ADD", Err: err}
		p.undo(ctx, st, list, rt, err)
		return nil, err
	}
	n, err := convertResult(res, netns, list)
	if err != nil {
		err = fmt.Errorf("CNI network %q: %w", list.Name, err)
		p.undo(ctx, st, list, rt, err)
		return nil, err
	}
	p.log.Debug("pod attached", "pod", podRef(pod), "network", list.Name, "ips", n.GetIps())
	return n, nil
}

// undo runs DEL after a failed ADD: the runtime does not send
// StopPodSandbox to the plugin whose RunPodSandbox failed.
func (p *Plugin) undo(ctx context.Context, st *state, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := st.cni.DelNetworkList(ctx, list, rt); err != nil {
		p.log.Warn("cleaning up after a failed ADD", "pod", rt.ContainerID, "cause", cause,
			"error", &OpError{Network: list.Name, Op: "DEL", Err: err})
	}
}

// StopPodSandbox detaches the pod (DEL) with the configuration and
// arguments libcni cached when the pod was added. A pod unknown to the
// cache gets a DEL with the current configuration, which plugins treat as
// nothing to do.
func (p *Plugin) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	netns := pod.NetNSPath()
	if netns == "" {
		return nil
	}
	st, err := p.current()
	if err != nil {
		return err
	}
	a := p.attachment(st, pod, netns)
	if err := st.cni.DelNetworkList(ctx, a.list, a.rt); err != nil {
		return &OpError{Network: a.list.Name, Op: "DEL", Err: err}
	}
	p.log.Debug("pod detached", "pod", podRef(pod), "network", a.list.Name, "cached", a.cached)
	return nil
}

// runtimeConf returns the CNI runtime configuration for a pod, with the
// arguments the kubelet and containerd pass.
func runtimeConf(pod *api.PodSandbox, netns string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: pod.GetId(),
		NetNS:       netns,
		IfName:      IfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.GetNamespace()},
			{"K8S_POD_NAME", pod.GetName()},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.GetId()},
			{"K8S_POD_UID", pod.GetUid()},
		},
	}
}

// attachment is how a pod was attached, as far as libcni's cache knows.
type attachment struct {
	list   *libcni.NetworkConfigList
	rt     *libcni.RuntimeConf
	cached bool // found in the cache; otherwise the current network
}

// attachment looks the pod up in libcni's cache: under the current
// network's name first, then under any name (the configuration may have
// been renamed since). Without a cache entry it returns the current
// network.
func (p *Plugin) attachment(st *state, pod *api.PodSandbox, netns string) attachment {
	rt := runtimeConf(pod, netns)
	conf, crt, err := st.cni.GetNetworkListCachedConfig(st.net.List, rt)
	if err != nil {
		p.log.Warn("reading libcni's cache", "pod", podRef(pod), "error", err)
	}
	if err == nil && conf != nil {
		return attachment{list: cachedList(conf, st.net.List), rt: crt, cached: true}
	}
	atts, err := st.cni.GetCachedAttachments(pod.GetId())
	if err != nil {
		p.log.Warn("reading libcni's cache", "pod", podRef(pod), "error", err)
	}
	for _, a := range atts {
		if a.IfName != IfName || a.ContainerID != pod.GetId() {
			continue
		}
		list, err := libcni.NetworkConfFromBytes(a.Config)
		if err != nil || len(list.Plugins) == 0 {
			continue
		}
		if a.CniArgs != nil {
			rt.Args = a.CniArgs
		}
		rt.CapabilityArgs = a.CapabilityArgs
		return attachment{list: list, rt: rt, cached: true}
	}
	return attachment{list: st.net.List, rt: rt}
}

// cachedList parses the configuration list libcni cached, falling back to
// cur (which has the same name) when it has no inline plugins.
func cachedList(conf []byte, cur *libcni.NetworkConfigList) *libcni.NetworkConfigList {
	list, err := libcni.NetworkConfFromBytes(conf)
	if err != nil || len(list.Plugins) == 0 {
		return cur
	}
	return list
}

// podRef names a pod in logs and errors.
func podRef(pod *api.PodSandbox) string {
	return fmt.Sprintf("%s/%s (%s)", pod.GetNamespace(), pod.GetName(), pod.GetId())
}
