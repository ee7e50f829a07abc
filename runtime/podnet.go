package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// RunPodSandbox relays the creation of a pod sandbox and returns the pod's
// network as the plugins set it, merged, with the plugin that set each part
// (nil if no plugin returned one, and always for host-network pods).
//
// Plugins are called in invocation order. Each sees in pod.ips the
// addresses merged so far, after those the runtime put there. A plugin's
// network is validated and merged under the ownership rules (see
// WithNetworkConflictPolicy). If a plugin fails, or its network is invalid
// or conflicts, the plugins that had succeeded get StopPodSandbox and
// RemovePodSandbox for the pod before the error is returned, so that
// nothing they allocated leaks.
//
// If required network plugins are configured and one of them is not
// connected, RunPodSandbox of a pod that is not host-network fails at once.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.PodNetworkRecord, error) {
	pod := req.GetPod()
	hostNetwork := pod.NetNSPath() == ""
	if !hostNetwork {
		if ready, why := r.NetworkReady(); !ready {
			return nil, fmt.Errorf("runtime: RunPodSandbox of pod %s/%s refused: %w: %s", pod.GetNamespace(), pod.GetName(), ErrNetworkNotReady, why)
		}
	}
	if err := r.validatePod(ctx, pod); err != nil {
		return nil, fmt.Errorf("runtime: RunPodSandbox of pod %s/%s refused: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	r.syncMu.RLock()
	defer r.syncMu.RUnlock()
	if r.isStopped() {
		return nil, ErrClosed
	}
	var (
		view      = pod
		parts     []contribution
		rec       *api.PodNetworkRecord
		succeeded []*plugin
	)
	fail := func(err error) (*api.PodNetworkRecord, error) {
		r.cleanupPod(ctx, pod, succeeded)
		return nil, err
	}
	defer r.forgetStatus(pod.GetId())
	for _, p := range r.subscribed(api.Event_RUN_POD_SANDBOX) {
		var rsp *api.RunPodSandboxResponse
		err := p.call(ctx, api.Event_RUN_POD_SANDBOX, view, nil, func(ctx context.Context, p *plugin) error {
			var err error
			rsp, err = rpc[api.RunPodSandboxResponse](ctx, p, "RunPodSandbox", &api.RunPodSandboxRequest{Pod: view})
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				// The caller gave up while this plugin was at work: it
				// may have set the pod up, so it is cleaned up too.
				succeeded = append(succeeded, p)
			}
			return fail(err)
		}
		if p.isClosed() {
			continue // dropped for a timeout or a broken connection
		}
		succeeded = append(succeeded, p) // it may have allocated something
		if rsp == nil {
			continue // answered through StateChange: no network
		}
		if hostNetwork {
			if rsp.GetAdjust().GetNetwork() != nil {
				p.logger().Warn("ignoring the network a plugin returned for a host-network pod",
					"pod", pod.GetNamespace()+"/"+pod.GetName(), "ips", rsp.GetAdjust().GetNetwork().GetIps())
			}
			continue
		}
		n, err := normalizePluginNetwork(p.fullName(), "RunPodSandbox", rsp.GetAdjust().GetNetwork())
		if err != nil {
			return fail(err)
		}
		if n == nil {
			continue
		}
		parts = append(parts, contribution{plugin: p.fullName(), net: n})
		merged, warnings, err := mergeNetworks(parts, r.cfg.conflictPolicy, r.cfg.familyPreference)
		if err != nil {
			var cerr *ConflictError
			if errors.As(err, &cerr) {
				r.cfg.observer.NetworkConflict(cerr.Plugin, cerr.Owner)
			}
			return fail(err)
		}
		for _, w := range warnings {
			p.logger().Warn("network conflict resolved by aggregation", "pod", pod.GetId(), "detail", w)
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
	if !hostNetwork {
		// A required plugin dropped during this round would leave the pod
		// without the network it must provide: fail closed.
		if ready, why := r.NetworkReady(); !ready {
			return fail(fmt.Errorf("runtime: RunPodSandbox of pod %s/%s: %w: %s", pod.GetNamespace(), pod.GetName(), ErrNetworkNotReady, why))
		}
	}
	return rec, nil
}

// cleanupPod tells plugins that set up (part of) a pod that failed to
// start to stop and remove it again. Errors are logged, not returned: the
// caller is already failing with the reason.
func (r *Runtime) cleanupPod(ctx context.Context, pod *api.PodSandbox, plugins []*plugin) {
	// Clean up even when the caller gave up: that may be why we fail.
	ctx = context.WithoutCancel(ctx)
	for _, p := range plugins {
		for _, ev := range []api.Event{api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX} {
			if !p.events.IsSet(ev) || p.isClosed() {
				continue
			}
			err := p.call(ctx, ev, pod, nil, func(ctx context.Context, p *plugin) error {
				var err error
				if ev == api.Event_STOP_POD_SANDBOX {
					_, err = rpc[api.StopPodSandboxResponse](ctx, p, "StopPodSandbox", &api.StopPodSandboxRequest{Pod: pod})
				} else {
					_, err = rpc[api.RemovePodSandboxResponse](ctx, p, "RemovePodSandbox", &api.RemovePodSandboxRequest{Pod: pod})
				}
				return err
			})
			if err != nil {
				p.logger().Warn("cleaning up after a failed RunPodSandbox failed", "pod", pod.GetId(), "event", ev.Method(), "error", err)
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
			return !p.isClosed() && (p.fullName() == want || p.name == want)
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
// then persisted through the PodNetworkStore.
func (r *Runtime) updatePodNetwork(ctx context.Context, p *plugin, req *api.UpdatePodSandboxNetworkRequest) error {
	name := p.fullName()
	store := r.cfg.netStore
	if store == nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: runtime %s keeps no pod network records", name, r.name)
	}
	podID := req.GetPodId()
	if podID == "" {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork: empty pod_id", name)
	}
	n, err := normalizePluginNetwork(name, "UpdatePodSandboxNetwork", req.GetNetwork())
	if err != nil {
		return err
	}
	unlock := r.lockPod(podID)
	defer unlock()
	old, err := store.PodNetwork(ctx, podID)
	if err != nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: %w", name, podID, err)
	}
	if old == nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: the pod has no pod network (host network)", name, podID)
	}
	parts := partsOf(old)
	parts[name] = n
	rec, warnings, err := mergeNetworks(ordered(parts), r.cfg.conflictPolicy, r.cfg.familyPreference)
	var cerr *ConflictError
	if errors.As(err, &cerr) && cerr.Owner == name {
		// The updater changed something; name it as the one in conflict.
		cerr.Plugin, cerr.Owner = cerr.Owner, cerr.Plugin
	}
	if err != nil {
		return err
	}
	for _, w := range warnings {
		p.logger().Warn("network conflict resolved by aggregation", "pod", podID, "detail", w)
	}
	rec.Stale = maps.Clone(old.GetStale())
	delete(rec.Stale, p.fullName())
	if err := store.SetPodNetwork(ctx, podID, p.fullName(), rec); err != nil {
		return fmt.Errorf("plugin %q: UpdatePodSandboxNetwork of pod %q: persisting: %w", name, podID, err)
	}
	r.forgetStatus(podID)
	p.logger().Info("pod network updated by plugin", "pod", podID, "ips", rec.GetNetwork().GetIps())
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
			out = append(out, contribution{plugin: k, net: parts[k]})
		}
	}
	return out
}

// lockPod serializes changes to one pod's network record (updates from
// several plugins at once) and returns the unlock function.
func (r *Runtime) lockPod(podID string) func() {
	r.podLocksMu.Lock()
	l, ok := r.podLocks[podID]
	if !ok {
		l = &podLock{}
		if r.podLocks == nil {
			r.podLocks = map[string]*podLock{}
		}
		r.podLocks[podID] = l
	}
	l.refs++
	r.podLocksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		r.podLocksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(r.podLocks, podID)
		}
		r.podLocksMu.Unlock()
	}
}

// podLock is a reference-counted per-pod mutex.
type podLock struct {
	mu   sync.Mutex
	refs int
}
