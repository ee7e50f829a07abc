package cni

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

// IfName is the name of the pod's interface that the CNI network creates
// (containerd's: prefix "eth", index 0).
const IfName = "eth0"

// cleanupTimeout bounds the DEL that undoes a failed ADD, which runs even
// when the request's own deadline has passed.
const cleanupTimeout = 30 * time.Second

// RunPodSandboxNetwork attaches the pod to the CNI network as containerd
// does and returns the pod's network from the result. Host-network pods
// are left alone. The network configuration is reloaded first if its
// directory changed. Then:
//
//   - the CNI runtime configuration is built (see runtimeConf in args.go);
//     a bandwidth annotation containerd would refuse fails the pod before
//     any plugin runs;
//   - STATUS (cniVersion 1.1.0 or later) asks each plugin of the list
//     whether it is ready; a failure fails the pod with an *OpError naming
//     the network and the plugin, and no ADD is run;
//   - the loopback network is added (ADD on LoopbackIfName), or lo is set
//     up directly with Config.UseInternalLoopback;
//   - ADD on IfName.
//
// If an ADD fails, DEL undoes what was added, and the error is an
// *OpError.
func (p *Plugin) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (_ *api.PodSandboxNetwork, err error) {
	netns := pod.NetNSPath()
	if netns == "" {
		return nil, nil
	}
	defer p.metrics.observe(OpSetup, time.Now(), &err)
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
	rt, err := runtimeConf(pod, netns, IfName)
	if err != nil {
		return nil, fmt.Errorf("CNI network %q: %w", list.Name, err)
	}
	if err := p.status(ctx, st); err != nil {
		return nil, err
	}
	var added []step
	if lo := st.net.Loopback; lo != nil {
		lrt, _ := runtimeConf(pod, netns, LoopbackIfName) // its error is rt's
		added = append(added, step{lo, lrt})
		if _, err := st.cni.AddNetworkList(ctx, lo, lrt); err != nil {
			err = &OpError{Network: lo.Name, Op: "ADD", Err: err}
			p.undo(ctx, st, added, err)
			return nil, err
		}
	} else if err := setLoopbackUp(netns); err != nil {
		return nil, fmt.Errorf("pod %s: %w", podRef(pod), err)
	}
	added = append(added, step{list, rt})
	res, err := st.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		err = &OpError{Network: list.Name, Op: "ADD", Err: err}
		p.undo(ctx, st, added, err)
		return nil, err
	}
	n, err := convertResult(res, netns, list)
	if err != nil {
		err = fmt.Errorf("CNI network %q: %w", list.Name, err)
		p.undo(ctx, st, added, err)
		return nil, err
	}
	p.log.Debug("pod attached", "pod", podName(pod), "sandbox", pod.GetId(), "network", list.Name, "ips", n.GetIps())
	return n, nil
}

// step is a network added to a pod, with its runtime configuration.
type step struct {
	list *libcni.NetworkConfigList
	rt   *libcni.RuntimeConf
}

// status runs STATUS on each plugin of the pod network's list, one at a
// time so that a failure names the plugin. libcni runs it only at
// cniVersion 1.1.0 and later (the loopback network is 0.3.1).
func (p *Plugin) status(ctx context.Context, st *state) error {
	list := st.net.List
	for _, pc := range list.Plugins {
		one := &libcni.NetworkConfigList{Name: list.Name, CNIVersion: list.CNIVersion, Plugins: []*libcni.PluginConfig{pc}}
		if err := st.cni.GetStatusNetworkList(ctx, one); err != nil {
			return &OpError{Network: list.Name, Op: "STATUS", Err: fmt.Errorf("plugin %s failed (status): %w", describePlugin(pc), err)}
		}
	}
	return nil
}

// describePlugin names a plugin of a list as libcni's errors do.
func describePlugin(pc *libcni.PluginConfig) string {
	if pc.Network.Name != "" {
		return fmt.Sprintf("type=%q name=%q", pc.Network.Type, pc.Network.Name)
	}
	return fmt.Sprintf("type=%q", pc.Network.Type)
}

// undo runs DEL, last network first, after a failed ADD: the runtime does
// not send StopPodSandbox to the plugin whose RunPodSandbox failed.
func (p *Plugin) undo(ctx context.Context, st *state, added []step, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for i := len(added) - 1; i >= 0; i-- {
		s := added[i]
		if err := st.cni.DelNetworkList(ctx, s.list, s.rt); err != nil {
			p.log.Warn("cleaning up after a failed ADD", "sandbox", s.rt.ContainerID, "cause", cause,
				"error", &OpError{Network: s.list.Name, Op: "DEL", Err: err})
		}
	}
}

// StopPodSandbox detaches the pod (DEL) from the loopback network, then
// from the pod's network, in containerd's order, each with the
// configuration and arguments libcni cached when the pod was added (so
// that a configuration changed since still tears down what the old one
// set up). A pod unknown to the cache gets a DEL with the current
// configuration, which plugins treat as nothing to do. Both DELs run;
// their errors are joined.
func (p *Plugin) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) (err error) {
	netns := pod.NetNSPath()
	if netns == "" {
		return nil
	}
	defer p.metrics.observe(OpTeardown, time.Now(), &err)
	st, err := p.current()
	if err != nil {
		return err
	}
	var errs []error
	if lo := st.net.Loopback; lo != nil {
		a := p.attachment(st, lo, pod, netns, LoopbackIfName)
		if err := st.cni.DelNetworkList(ctx, a.list, a.rt); err != nil {
			errs = append(errs, &OpError{Network: a.list.Name, Op: "DEL", Err: err})
		}
	}
	a := p.attachment(st, st.net.List, pod, netns, IfName)
	if err := st.cni.DelNetworkList(ctx, a.list, a.rt); err != nil {
		errs = append(errs, &OpError{Network: a.list.Name, Op: "DEL", Err: err})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.log.Debug("pod detached", "pod", podName(pod), "sandbox", pod.GetId(), "network", a.list.Name, "cached", a.cached)
	return nil
}

// attachment is how a pod was attached, as far as libcni's cache knows.
type attachment struct {
	list   *libcni.NetworkConfigList
	rt     *libcni.RuntimeConf
	cached bool // found in the cache; otherwise the current network
}

// attachment looks the pod's attachment on ifName up in libcni's cache:
// under cur's name first, then under any name (the configuration may have
// been renamed since). Without a cache entry it returns cur with the
// pod's current arguments.
func (p *Plugin) attachment(st *state, cur *libcni.NetworkConfigList, pod *api.PodSandbox, netns, ifName string) attachment {
	rt, err := runtimeConf(pod, netns, ifName)
	if err != nil {
		p.log.Warn("building the CNI arguments of a pod to detach", "error", err)
	}
	conf, crt, err := st.cni.GetNetworkListCachedConfig(cur, rt)
	if err != nil {
		p.log.Warn("reading libcni's cache", "pod", podName(pod), "sandbox", pod.GetId(), "error", err)
	}
	if err == nil && conf != nil {
		return attachment{list: cachedList(conf, cur), rt: crt, cached: true}
	}
	atts, err := st.cni.GetCachedAttachments(pod.GetId())
	if err != nil {
		p.log.Warn("reading libcni's cache", "pod", podName(pod), "sandbox", pod.GetId(), "error", err)
	}
	for _, a := range atts {
		if a.IfName != ifName || a.ContainerID != pod.GetId() {
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
	return attachment{list: cur, rt: rt}
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

// podName is a pod's namespace/name, the value of the "pod" key of log
// lines; its ID goes under "sandbox".
func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}

// podRef names a pod in errors.
func podRef(pod *api.PodSandbox) string {
	return fmt.Sprintf("%s/%s (%s)", pod.GetNamespace(), pod.GetName(), pod.GetId())
}
