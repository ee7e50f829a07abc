package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// RunPodSandbox relays the creation of a pod sandbox and returns the pod's
// network as the plugins set it, merged, with the plugin that set each part
// (nil if no plugin returned one, and always for host-network pods and pods
// whose network the runtime owns: req.runtime_owns_network).
//
// Plugins are called in invocation order. Each sees in pod.ips the
// addresses merged so far, after those the runtime put there. A plugin's
// network is validated and merged under the ownership rules (see
// WithNetworkConflictPolicy). If a plugin fails, or its network is invalid
// or conflicts, the plugins that had succeeded get StopPodSandbox and
// RemovePodSandbox for the pod before the error is returned, so that
// nothing they allocated leaks.
//
// If required network plugins are configured (WithRequiredNetworkPlugins),
// RunPodSandbox of a pod whose network the plugins set up fails at once
// while one of them is not connected, and fails (cleaning up) when one of
// them gave the pod no address. A pod larger than api.MaxObjectSize is
// refused with an error wrapping api.ErrTooLarge.
//
// The plugins set up the network of a pod that has a network namespace,
// unless req.runtime_owns_network says the runtime set it up itself (a
// runtime that lets the plugins set up new pods' networks but still runs
// pods it networked before, or the other way round): then no plugin has a
// part in it, as for a host-network pod. The plugins that negotiated the
// extension are told so in the request, and the plugin library calls no
// RunPodSandboxNetwork for it.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.PodNetworkRecord, error) {
	pod := req.GetPod()
	if err := checkSizes(pod, nil); err != nil {
		return nil, fmt.Errorf("runtime: RunPodSandbox refused: %w", err)
	}
	hostNetwork := pod.NetNSPath() == ""
	runtimeOwned := req.GetRuntimeOwnsNetwork()
	pluginsNetwork := !hostNetwork && !runtimeOwned
	if pluginsNetwork {
		if ready, why := r.NetworkReady(); !ready {
			return nil, fmt.Errorf("runtime: RunPodSandbox of pod %s/%s refused: %w: %s", pod.GetNamespace(), pod.GetName(), ErrNetworkNotReady, why)
		}
	}
	rq, err := r.begin(ctx, api.Event_RUN_POD_SANDBOX, pod, nil, req)
	if err != nil {
		return nil, err
	}
	defer rq.end()
	defer r.forgetStatus(pod.GetId())
	var (
		view      = pod
		parts     []contribution
		rec       *api.PodNetworkRecord
		succeeded []*plugin
	)
	failed := func(err error) (*api.PodNetworkRecord, error) {
		r.cleanupPod(ctx, pod, succeeded, rq.joiners)
		return nil, err
	}
	// Validation is part of the request: a plugin joining meanwhile gets
	// the pod as an event, not also in its Synchronize; a refused pod is
	// withdrawn from it again.
	if err := r.validatePod(ctx, pod); err != nil {
		return failed(fmt.Errorf("runtime: RunPodSandbox of pod %s/%s refused: %w", pod.GetNamespace(), pod.GetName(), err))
	}
	for _, p := range rq.plugins {
		var rsp *api.RunPodSandboxResponse
		v, o, err := p.call(ctx, api.Event_RUN_POD_SANDBOX, view, nil, lifecycle, func(ctx context.Context, p *plugin) error {
			var err error
			rsp, err = rpc[api.RunPodSandboxResponse](ctx, p, "RunPodSandbox", &api.RunPodSandboxRequest{Pod: view, RuntimeOwnsNetwork: runtimeOwned})
			return err
		})
		if v != useAnswer && o.unsettled() {
			// It may have set the pod up, or still be at it, so it is
			// cleaned up too.
			succeeded = append(succeeded, p)
		}
		switch v {
		case fail:
			return failed(err)
		case skip:
			continue // dropped for a timeout or a broken connection
		}
		succeeded = append(succeeded, p) // it may have allocated something
		if rsp == nil {
			continue // answered through StateChange: no network
		}
		if why := r.networkIgnored(p, hostNetwork, runtimeOwned); why != "" {
			warnIgnoredNetwork(p, pod, rsp.GetAdjust().GetNetwork(), why)
			continue
		}
		n, err := normalizePluginNetwork(p.fullName(), "RunPodSandbox", rsp.GetAdjust().GetNetwork())
		if err != nil {
			return failed(err)
		}
		if n == nil {
			continue
		}
		parts = append(parts, contribution{Plugin: p.fullName(), Network: n})
		merged, warnings, err := merge.Networks(parts, r.cfg.conflictPolicy, r.cfg.familyPreference)
		if err != nil {
			var cerr *ConflictError
			if errors.As(err, &cerr) {
				r.cfg.observer.NetworkConflict(cerr.Plugin, cerr.Owner)
			}
			return failed(err)
		}
		for _, w := range warnings {
			p.logger().Warn("network conflict resolved by aggregation", "pod", podName(pod), "sandbox", pod.GetId(), "detail", w)
		}
		rec = merged
		// Later plugins see the addresses merged so far.
		view = proto.CloneOf(pod)
		view.Ips = slices.Clone(pod.GetIps())
		for _, ip := range rec.GetNetwork().GetIps() {
			if !slices.Contains(view.Ips, ip) {
				view.Ips = append(view.Ips, ip)
			}
		}
	}
	if pluginsNetwork {
		if err := r.checkAuthority(pod, rec); err != nil {
			return failed(err)
		}
	}
	return rec, nil
}

// checkAuthority fails a pod that did not get the network its required
// network plugins must provide: each of them must be connected and must
// own at least one of the pod's addresses.
func (r *Runtime) checkAuthority(pod *api.PodSandbox, rec *api.PodNetworkRecord) error {
	if len(r.cfg.requiredNetwork) == 0 {
		return nil
	}
	// A required plugin dropped during this round leaves the pod without
	// the network it must provide: fail closed.
	if ready, why := r.NetworkReady(); !ready {
		return fmt.Errorf("runtime: RunPodSandbox of pod %s/%s: %w: %s", pod.GetNamespace(), pod.GetName(), ErrNetworkNotReady, why)
	}
	owners := strings.Split(rec.GetOwners()[api.OwnerIPv4]+","+rec.GetOwners()[api.OwnerIPv6], ",")
	var missing []string
	for _, want := range r.cfg.requiredNetwork {
		if !slices.ContainsFunc(owners, func(owner string) bool { return owner != "" && requiredMatches(want, owner) }) {
			missing = append(missing, fmt.Sprintf("%q", want))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("runtime: RunPodSandbox of pod %s/%s: %w: required network plugin %s gave it none",
			pod.GetNamespace(), pod.GetName(), ErrNoAddress, strings.Join(missing, ", "))
	}
	return nil
}

// requiredMatches reports whether the plugin of full name "NN-name"
// satisfies a required network plugin configured as want: a full name
// ("10-podnet") matches that plugin only, a base name ("podnet") the
// plugin of that name at any index.
func requiredMatches(want, full string) bool {
	if _, _, err := api.ParsePluginFileName(want); err == nil {
		return full == want
	}
	_, name, ok := strings.Cut(full, "-")
	return ok && name == want
}

// networkIgnored says why a network p returns for a pod is not the pod's
// (": this runtime has no pod network extension", " for a host-network
// pod", ...), or "" when it is to be merged.
func (r *Runtime) networkIgnored(p *plugin, hostNetwork, runtimeOwned bool) string {
	switch {
	case r.cfg.noNetExtension:
		return ": this runtime has no pod network extension"
	case p.netExt.Load() == 0:
		return ": it did not take the pod network extension"
	case hostNetwork:
		return " for a host-network pod"
	case runtimeOwned:
		return " for a pod whose network the runtime owns"
	}
	return ""
}

// warnIgnoredNetwork logs that the network n p returned for pod is
// ignored, and why (networkIgnored); a plugin that returned none is not
// told of.
func warnIgnoredNetwork(p *plugin, pod *api.PodSandbox, n *api.PodSandboxNetwork, why string) {
	if n != nil {
		p.logger().Warn("ignoring the network a plugin returned"+why, "pod", podName(pod), "sandbox", pod.GetId(), "ips", n.GetIps())
	}
}

// lateRunPodSandbox delivers a pod created while a plugin joined (req, as
// the request was made): the network the plugin returns is merged into the
// pod's record like an UpdatePodSandboxNetwork, or, if that cannot be done
// yet (the runtime has not stored the pod), reported at the pod's next
// PodSandboxStatus.
func (r *Runtime) lateRunPodSandbox(ctx context.Context, p *plugin, req *api.RunPodSandboxRequest) error {
	pod := req.GetPod()
	rsp, err := rpc[api.RunPodSandboxResponse](ctx, p, "RunPodSandbox", &api.RunPodSandboxRequest{Pod: pod, RuntimeOwnsNetwork: req.GetRuntimeOwnsNetwork()})
	if err != nil {
		return err
	}
	n := rsp.GetAdjust().GetNetwork()
	if why := r.networkIgnored(p, false, req.GetRuntimeOwnsNetwork()); why != "" {
		warnIgnoredNetwork(p, pod, n, why)
		return nil
	}
	if n == nil || pod.NetNSPath() == "" || !r.track() {
		return nil
	}
	// Recorded outside the call: the store's time is not the plugin's.
	go func() {
		defer r.wg.Done()
		if err := r.updatePodNetwork(r.ctx, p, &api.UpdatePodSandboxNetworkRequest{PodId: pod.GetId(), Network: n}); err != nil {
			p.logger().Info("the network of a pod created while the plugin joined is not recorded yet; its next status round asks again",
				"pod", podName(pod), "sandbox", pod.GetId(), "error", err)
		}
	}()
	return nil
}

// cleanupPod tells plugins that set up (part of) a pod that failed to
// start to stop and remove it again, and so the joining plugins the pod's
// creation was queued for (joiners): those still joining get the events
// queued, those that joined since get them directly. Errors are logged,
// not returned: the caller is already failing with the reason.
func (r *Runtime) cleanupPod(ctx context.Context, pod *api.PodSandbox, plugins, joiners []*plugin) {
	// Clean up even when the caller gave up: that may be why we fail.
	ctx = context.WithoutCancel(ctx)
	stop := func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.StopPodSandboxResponse](ctx, p, "StopPodSandbox", &api.StopPodSandboxRequest{Pod: pod})
		return err
	}
	remove := func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.RemovePodSandboxResponse](ctx, p, "RemovePodSandbox", &api.RemovePodSandboxRequest{Pod: pod})
		return err
	}
	r.mu.Lock()
	r.queueLocked(api.Event_STOP_POD_SANDBOX, pod, nil, &api.StopPodSandboxRequest{Pod: pod})
	r.queueLocked(api.Event_REMOVE_POD_SANDBOX, pod, nil, &api.RemovePodSandboxRequest{Pod: pod})
	for _, j := range joiners {
		if _, joining := r.joining[j]; !joining && slices.Contains(r.plugins, j) && !slices.Contains(plugins, j) {
			plugins = append(plugins, j) // it caught up on the pod, then joined
		}
	}
	r.mu.Unlock()
	for _, p := range plugins {
		for _, step := range []struct {
			ev api.Event
			fn func(context.Context, *plugin) error
		}{{api.Event_STOP_POD_SANDBOX, stop}, {api.Event_REMOVE_POD_SANDBOX, remove}} {
			if !p.events.IsSet(step.ev) || p.isClosed() {
				continue
			}
			if v, _, err := p.call(ctx, step.ev, pod, nil, lifecycle, step.fn); v != useAnswer {
				p.logger().Warn("cleaning up after a failed RunPodSandbox failed", "pod", podName(pod), "sandbox", pod.GetId(), "event", step.ev.Method(), "error", err)
			}
		}
	}
}

// NetworkReady reports whether every required network plugin (see
// WithRequiredNetworkPlugins) is connected, and if not, which are missing.
func (r *Runtime) NetworkReady() (bool, string) {
	if len(r.cfg.requiredNetwork) == 0 {
		return true, ""
	}
	r.mu.Lock()
	var missing []string
	for _, want := range r.cfg.requiredNetwork {
		found := slices.ContainsFunc(r.plugins, func(p *plugin) bool {
			return !p.isClosed() && requiredMatches(want, p.fullName())
		})
		if !found {
			missing = append(missing, fmt.Sprintf("%q", want))
		}
	}
	r.mu.Unlock()
	if len(missing) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("required network plugin %s not connected", strings.Join(missing, ", "))
}

// updatePodNetwork applies a plugin's UpdatePodSandboxNetwork: the new part
// is validated and merged under the same rules as a RunPodSandbox result,
// then persisted through the PodNetworkStore. An empty network is refused;
// withdraw removes the plugin's part.
func (r *Runtime) updatePodNetwork(ctx context.Context, p *plugin, req *api.UpdatePodSandboxNetworkRequest) error {
	name := p.fullName()
	store := r.cfg.netStore
	if r.cfg.noNetExtension {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: runtime %s has no pod network extension", name, r.name)
	}
	if p.netExt.Load() == 0 {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: the plugin did not take the pod network extension in Configure", name)
	}
	if store == nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: runtime %s keeps no pod network records", name, r.name)
	}
	podID := req.GetPodId()
	if podID == "" {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: empty pod_id", name)
	}
	n, err := normalizePluginNetwork(name, "UpdatePodSandboxNetwork", req.GetNetwork())
	switch {
	case err != nil:
		return err
	case req.GetWithdraw() && n != nil:
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: %w: withdraw with a network", name, podID, ErrInvalidUpdate)
	case !req.GetWithdraw() && n == nil:
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: %w: empty network (to remove the plugin's part, withdraw it)", name, podID, ErrInvalidUpdate)
	}
	unlock := r.podLocks.Lock(podID)
	defer unlock()
	old, err := store.PodNetwork(ctx, podID)
	if err != nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: %w", name, podID, err)
	}
	if old == nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: the pod has no pod network of the plugins' (host network, or the runtime's own)", name, podID)
	}
	parts := partsOf(old)
	if req.GetWithdraw() {
		delete(parts, name)
	} else {
		parts[name] = n
	}
	rec, warnings, err := merge.Networks(ordered(parts), r.cfg.conflictPolicy, r.cfg.familyPreference)
	var cerr *ConflictError
	if errors.As(err, &cerr) && cerr.Owner == name {
		// The updater changed something; name it as the one in conflict.
		cerr.Plugin, cerr.Owner = cerr.Owner, cerr.Plugin
	}
	if err != nil {
		return err
	}
	for _, w := range warnings {
		p.logger().Warn("network conflict resolved by aggregation", "sandbox", podID, "detail", w)
	}
	rec.Stale = maps.Clone(old.GetStale())
	delete(rec.Stale, p.fullName())
	r.forgetStatus(podID) // before and after: no round of the old record may be cached across the change
	if err := store.SetPodNetwork(ctx, podID, p.fullName(), rec); err != nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: persisting: %w", name, podID, err)
	}
	r.forgetStatus(podID)
	if req.GetWithdraw() {
		p.logger().Info("plugin withdrew its part of the pod network", "sandbox", podID, "ips", rec.GetNetwork().GetIps())
	} else {
		p.logger().Info("pod network updated by plugin", "sandbox", podID, "ips", rec.GetNetwork().GetIps())
	}
	return nil
}

// partsOf returns a copy of the per-plugin parts of a record, never nil.
func partsOf(rec *api.PodNetworkRecord) map[string]*api.PodSandboxNetwork {
	if parts := maps.Clone(rec.GetPlugins()); parts != nil {
		return parts
	}
	return map[string]*api.PodSandboxNetwork{}
}

// ordered lists parts in invocation order: "NN-name" sorts by index, then
// name.
func ordered(parts map[string]*api.PodSandboxNetwork) []contribution {
	out := make([]contribution, 0, len(parts))
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		if parts[k] != nil {
			out = append(out, contribution{Plugin: k, Network: parts[k]})
		}
	}
	return out
}
