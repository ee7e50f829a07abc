package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// staleServeFactor bounds, in multiples of the cache TTL past expiry, how
// long an expired cached status is still served while a background round
// refreshes it.
const staleServeFactor = 4

// statusCache holds recent non-verbose PodSandboxStatus results and
// coalesces concurrent rounds for the same pod.
type statusCache struct {
	group singleflight.Group
	mu    sync.Mutex // guards entries and gen
	// entries are results by pod ID, until their expiry.
	entries map[string]statusEntry
	// gen counts, per pod, the changes that invalidate a round in flight.
	gen map[string]uint64
}

type statusEntry struct {
	rec     *api.PodNetworkRecord
	expires time.Time
}

// generation returns the pod's current generation.
func (c *statusCache) generation(id string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen[id]
}

// put caches rec for ttl. Expired entries are swept when the cache has
// grown, so pods that were never stopped through this Runtime do not pile up.
func (c *statusCache) put(id string, gen uint64, rec *api.PodNetworkRecord, ttl time.Duration) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[id] != gen {
		return // the pod's network changed while the round ran
	}
	if c.entries == nil {
		c.entries = map[string]statusEntry{}
	}
	if len(c.entries) >= 1024 && len(c.entries)%256 == 0 {
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	c.entries[id] = statusEntry{rec: rec, expires: now.Add(ttl)}
}

// forgetStatus drops a pod's cached status, after its network changed.
func (r *Runtime) forgetStatus(podID string) {
	r.status.mu.Lock()
	delete(r.status.entries, podID)
	if r.status.gen == nil {
		r.status.gen = map[string]uint64{}
	}
	r.status.gen[podID]++
	r.status.mu.Unlock()
	r.status.group.Forget(podID)
	r.status.group.Forget(podID + "\x00verbose")
}

// PodSandboxStatus returns a pod's current network. It starts from last,
// the record the runtime persisted (from RunPodSandbox or a later
// update), and asks the plugins subscribed to PodSandboxStatus, in
// parallel, under the status timeout (WithStatusTimeout). A plugin that
// answers replaces its own part; one that fails, does not answer in time or
// is not connected keeps its last known part, and the result names it in
// Stale with the reason. Concurrent calls for one pod share one round of
// plugin calls, and a non-verbose call may be answered from the result of
// a round less than WithStatusCacheTTL old. Verbose calls always ask.
//
// The result is the caller's to keep; it never fails because of a plugin.
// Host-network pods get last back unchanged.
func (r *Runtime) PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, last *api.PodNetworkRecord, verbose bool) (*api.PodNetworkRecord, error) {
	if pod.NetNSPath() == "" {
		return proto.CloneOf(last), nil
	}
	id := pod.GetId()
	key := id
	if verbose {
		key += "\x00verbose"
	}
	gen := r.status.generation(id)
	last = proto.CloneOf(last) // the round and the cache must not share the caller's record
	// The round belongs to every caller that joins it: it runs without
	// the first caller's cancellation, bounded by the status timeout, and
	// each caller waits only as long as its own context allows.
	round := func() (any, error) {
		rec, err := r.statusRound(context.WithoutCancel(ctx), pod, last, verbose)
		if err == nil && !verbose && r.cfg.statusCacheTTL > 0 {
			r.status.put(id, gen, rec, r.cfg.statusCacheTTL)
		}
		return rec, err
	}
	if !verbose && r.cfg.statusCacheTTL > 0 {
		r.status.mu.Lock()
		e, ok := r.status.entries[id]
		r.status.mu.Unlock()
		now := time.Now()
		switch {
		case ok && now.Before(e.expires):
			return proto.CloneOf(e.rec), nil
		case ok && now.Before(e.expires.Add(staleServeFactor*r.cfg.statusCacheTTL)):
			// Expired recently: answer with it at once and refresh in
			// the background, so that a plain status (the kubelet's PLEG)
			// never waits for plugins while the cache is warm.
			ch := r.status.group.DoChan(key, round)
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				<-ch
			}()
			return proto.CloneOf(e.rec), nil
		}
	}
	ch := r.status.group.DoChan(key, round)
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return proto.CloneOf(res.Val.(*api.PodNetworkRecord)), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("runtime: PodSandboxStatus of pod %q: %w", id, ctx.Err())
	}
}

// statusAnswer is one plugin's answer in a status round.
type statusAnswer struct {
	net *api.PodSandboxNetwork
	err error
}

// statusRound asks the subscribed plugins in parallel and merges.
func (r *Runtime) statusRound(ctx context.Context, pod *api.PodSandbox, last *api.PodNetworkRecord, verbose bool) (*api.PodNetworkRecord, error) {
	plugins := r.subscribed(api.Event_POD_SANDBOX_STATUS)
	if r.isStopped() {
		return nil, ErrClosed
	}

	sctx, cancel := context.WithTimeout(ctx, r.cfg.statusTimeout)
	defer cancel()
	answers := make([]statusAnswer, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = p.status(sctx, pod, verbose)
		}()
	}
	wg.Wait()

	parts := partsOf(last)
	stale := map[string]string{}
	answered := map[string]bool{}
	for i, p := range plugins {
		name := p.fullName()
		answered[name] = true
		a := answers[i]
		switch {
		case a.err != nil:
			stale[name] = a.err.Error()
			p.logger().Warn("PodSandboxStatus: keeping the plugin's last known part of the pod network",
				"pod", pod.GetId(), "reason", a.err)
		case a.net != nil:
			parts[name] = a.net
		}
	}
	// Parts of plugins that are gone keep their values and are stale.
	connected := r.connectedNames()
	for name := range parts {
		if !answered[name] && !connected[name] {
			stale[name] = "plugin not connected"
		}
	}
	rec, err := r.mergeStatus(pod, last, parts, stale)
	if err != nil {
		return nil, err
	}
	if len(stale) > 0 {
		rec.Stale = stale
		for name := range stale {
			r.cfg.observer.StatusStale(name)
		}
	}
	return rec, nil
}

// mergeStatus merges the parts. When a plugin's new part conflicts with
// another plugin's, the plugin whose part changed keeps its old part and
// is marked stale with the conflict. Parts that conflict although neither
// changed (a record the runtime stored inconsistently) leave the stored
// record as it was, with both plugins marked stale.
func (r *Runtime) mergeStatus(pod *api.PodSandbox, last *api.PodNetworkRecord, parts map[string]*api.PodSandboxNetwork, stale map[string]string) (*api.PodNetworkRecord, error) {
	oldParts := partsOf(last)
	changed := func(name string) bool { return !proto.Equal(parts[name], oldParts[name]) }
	for range len(parts) + 1 {
		rec, _, err := mergeNetworks(ordered(parts), r.cfg.conflictPolicy, r.cfg.familyPreference)
		var cerr *ConflictError
		if !errors.As(err, &cerr) {
			return rec, err
		}
		culprit := cerr.Plugin
		if !changed(culprit) {
			culprit = cerr.Owner
		}
		if !changed(culprit) {
			stale[cerr.Plugin] = "stored part conflicts: " + err.Error()
			stale[cerr.Owner] = "stored part conflicts: " + err.Error()
			out := proto.CloneOf(last)
			if out == nil {
				out = &api.PodNetworkRecord{}
			}
			return out, nil
		}
		stale[culprit] = "reported a conflicting network: " + err.Error()
		if old, ok := oldParts[culprit]; ok {
			parts[culprit] = old
		} else {
			delete(parts, culprit)
		}
	}
	return nil, fmt.Errorf("runtime: PodSandboxStatus of pod %q: the plugins' parts do not merge", pod.GetId())
}

// status asks one plugin for its part of the pod's network. An empty
// answer, or UNIMPLEMENTED, means the plugin reports nothing.
func (p *plugin) status(ctx context.Context, pod *api.PodSandbox, verbose bool) statusAnswer {
	start := time.Now()
	rsp, err := rpc[api.PodSandboxStatusResponse](ctx, p, "PodSandboxStatus", &api.PodSandboxStatusRequest{Pod: pod, Verbose: verbose})
	p.r.cfg.observer.PluginCall(p.fullName(), "PodSandboxStatus", time.Since(start), err)
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return statusAnswer{}
		}
		if p.isClosed() || isTransportError(err) {
			return statusAnswer{err: fmt.Errorf("plugin %q: PodSandboxStatus: connection lost: %w", p.fullName(), err)}
		}
		// The plugin's side of the deadline may fire first and come back
		// as its error: that is still no answer in time.
		if ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
			return statusAnswer{err: fmt.Errorf("plugin %q: PodSandboxStatus: no answer within %v", p.fullName(), p.r.cfg.statusTimeout)}
		}
		return statusAnswer{err: (&PluginError{Plugin: p.fullName(), Method: "PodSandboxStatus", Err: err})}
	}
	n := rsp.GetNetwork()
	if n == nil && (rsp.GetIp() != "" || len(rsp.GetAdditionalIps()) > 0) {
		n = &api.PodSandboxNetwork{}
		if rsp.GetIp() != "" {
			n.Ips = append(n.Ips, rsp.GetIp())
		}
		n.Ips = append(n.Ips, rsp.GetAdditionalIps()...)
	}
	norm, err := normalizePluginNetwork(p.fullName(), "PodSandboxStatus", n)
	if err != nil {
		return statusAnswer{err: err}
	}
	return statusAnswer{net: norm}
}
