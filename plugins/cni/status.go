package cni

import (
	"context"
	"fmt"
	"time"

	"github.com/nrinet/nrinet/api"
)

// PodSandboxStatus reports the pod's network from libcni's cached ADD
// result; nil if the pod is host-network or unknown to the cache. With
// verbose it also runs CHECK and reports the outcome in info under
// InfoCheck: "ok", "disabled" (the list sets disableCheck), or the error.
func (p *Plugin) PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, verbose bool) (_ *api.PodSandboxNetwork, err error) {
	netns := pod.NetNSPath()
	if netns == "" {
		return nil, nil
	}
	defer p.metrics.observe(OpStatus, time.Now(), &err)
	st, err := p.current()
	if err != nil {
		return nil, err
	}
	a := p.attachment(st, st.net.List, pod, netns, IfName)
	if !a.cached {
		return nil, nil
	}
	res, err := st.cni.GetNetworkListCachedResult(a.list, a.rt)
	if err != nil {
		return nil, fmt.Errorf("CNI network %q: reading the cached result of pod %s: %w", a.list.Name, podRef(pod), err)
	}
	if res == nil {
		return nil, nil
	}
	n, err := convertResult(res, netns, a.list)
	if err != nil {
		return nil, fmt.Errorf("CNI network %q: cached result of pod %s: %w", a.list.Name, podRef(pod), err)
	}
	if verbose {
		check := "ok"
		if a.list.DisableCheck {
			check = "disabled"
		} else if err := st.cni.CheckNetworkList(ctx, a.list, a.rt); err != nil {
			check = (&OpError{Network: a.list.Name, Op: "CHECK", Err: err}).Error()
		}
		n.Info[InfoCheck] = check
	}
	return n, nil
}
