package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// staleServeFactor bounds, in multiples of the cache TTL past expiry, how
// long an expired cached status is still served while a background round
// refreshes it.
const staleServeFactor = 4

// statusCache holds recent non-verbose PodSandboxStatus results and
// coalesces concurrent rounds for the same pod. It keeps nothing for a
// pod once the pod is removed.
type statusCache struct {
	// group coalesces rounds by pod ID, verbose those of verbose calls.
	group, verbose singleflight.Group
	mu             sync.Mutex // guards entries and rounds
	// entries are results by pod ID, until their expiry.
	entries map[string]statusEntry
	// rounds holds, per pod with a round in flight, the token of the
	// latest round that may cache its result: a change of the pod's
	// network removes it, so that a round that started before the
	// change does not cache what it found.
	rounds map[string]*roundToken
}

type statusEntry struct {
	// from is the record the round started from; rec what it found.
	from, rec *api.PodNetworkRecord
	expires   time.Time
}

// serves reports whether the entry answers a caller whose persisted
// record is last: the round must have started from it, or found it (the
// caller persisted the round's result). Otherwise the caller knows of a
// change the round did not see.
func (e statusEntry) serves(last *api.PodNetworkRecord) bool {
	return e.from.EqualVT(last) || e.rec.EqualVT(last)
}

// roundToken identifies a round that may cache its result.
type roundToken struct{}

// token returns the token of the pod's next or current round.
func (c *statusCache) token(id string) *roundToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.rounds[id]; ok {
		return t
	}
	if c.rounds == nil {
		c.rounds = map[string]*roundToken{}
	}
	t := &roundToken{}
	c.rounds[id] = t
	return t
}

// put caches rec from now for ttl if the round of token t is still
// current, and ends the round. Expired entries are swept when the cache
// has grown, so pods that were never stopped through this Runtime do not
// pile up.
func (c *statusCache) put(id string, t *roundToken, from, rec *api.PodNetworkRecord, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rounds[id] != t {
		return // the pod's network changed while the round ran
	}
	delete(c.rounds, id)
	if rec == nil || ttl <= 0 {
		return
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
	c.entries[id] = statusEntry{from: from, rec: rec, expires: now.Add(ttl)}
}

// forgetStatus drops what is cached about a pod, after its network
// changed or it was removed.
func (r *Runtime) forgetStatus(podID string) {
	r.status.mu.Lock()
	delete(r.status.entries, podID)
	delete(r.status.rounds, podID)
	r.status.mu.Unlock()
	r.status.group.Forget(podID)
	r.status.verbose.Forget(podID)
}

// PodSandboxStatus returns a pod's current network. It starts from last,
// the record the runtime persisted (from RunPodSandbox or a later
// update), and asks the plugins subscribed to PodSandboxStatus, in
// parallel, under the status timeout (WithStatusTimeout), and answers by
// that deadline whatever the plugins do. A plugin that answers replaces
// its own part; one that fails, does not answer in time or is not
// connected keeps its last known part, and the result names it in Stale
// with the reason. Concurrent calls for one pod share one round of plugin
// calls, and a non-verbose call may be answered from the result of a
// round less than WithStatusCacheTTL old. Verbose calls always ask.
//
// The result is the caller's to keep; it never fails because of a plugin.
// Host-network pods get last back unchanged.
func (r *Runtime) PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, last *api.PodNetworkRecord, verbose bool) (*api.PodNetworkRecord, error) {
	if pod.NetNSPath() == "" {
		return proto.CloneOf(last), nil
	}
	id := pod.GetId()
	group := &r.status.group
	if verbose {
		group = &r.status.verbose
	}
	cache := !verbose && r.cfg.statusCacheTTL > 0
	if cache {
		r.status.mu.Lock()
		e, ok := r.status.entries[id]
		r.status.mu.Unlock()
		if ok && r.cfg.now().Before(e.expires) && e.serves(last) {
			return proto.CloneOf(e.rec), nil
		}
	}
	var token *roundToken
	if cache {
		token = r.status.token(id)
	}
	last = proto.CloneOf(last) // the round and the cache must not share the caller's record
	// The round belongs to every caller that joins it: it runs without
	// the first caller's cancellation, bounded by the status timeout, and
	// each caller waits only as long as its own context allows.
	round := func() (any, error) {
		// singleflight runs the round on a goroutine of its own: it is
		// the Runtime's, and Stop waits for it.
		if !r.track() {
			return nil, ErrClosed
		}
		defer r.wg.Done()
		rec, err := r.statusRound(context.WithoutCancel(ctx), pod, last, verbose)
		if cache {
			r.status.put(id, token, last, rec, r.cfg.now(), r.cfg.statusCacheTTL)
		}
		return rec, err
	}
	if cache {
		r.status.mu.Lock()
		e, ok := r.status.entries[id]
		r.status.mu.Unlock()
		if ok && r.cfg.now().Before(e.expires.Add(staleServeFactor*r.cfg.statusCacheTTL)) && e.serves(last) {
			// Expired recently: answer with it at once and refresh in
			// the background, so that a plain status (the kubelet's PLEG)
			// never waits for plugins while the cache is warm.
			group.DoChan(id, round) // its channel is buffered
			return proto.CloneOf(e.rec), nil
		}
	}
	ch := group.DoChan(id, round)
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

// statusRound asks the subscribed plugins in parallel and merges.
func (r *Runtime) statusRound(ctx context.Context, pod *api.PodSandbox, last *api.PodNetworkRecord, verbose bool) (*api.PodNetworkRecord, error) {
	if r.isStopped() {
		return nil, ErrClosed
	}
	plugins := r.subscribed(api.Event_POD_SANDBOX_STATUS)
	const method = "PodSandboxStatus"
	req := &api.PodSandboxStatusRequest{Pod: pod, Verbose: verbose}
	replies := fanout(ctx, plugins, method, r.cfg.statusTimeout, query, func(ctx context.Context, p *plugin) (*api.PodSandboxNetwork, error) {
		rsp, err := rpc[api.PodSandboxStatusResponse](ctx, p, method, req)
		if errUnimplemented(err) {
			return nil, nil // the plugin reports nothing
		}
		if err != nil {
			return nil, err
		}
		if p.netExt.Load() == 0 {
			return nil, nil // no part in pod networks without the extension
		}
		return statusNetwork(p.fullName(), rsp)
	})

	parts := partsOf(last)
	stale := map[string]string{}
	answered := map[string]bool{}
	for i, p := range plugins {
		name := p.fullName()
		answered[name] = true
		rp := replies[i]
		switch {
		case rp.verdict != useAnswer:
			stale[name] = rp.err.Error()
			p.warnStale(pod, rp.err)
		case rp.val != nil:
			parts[name] = rp.val
		}
	}
	// Parts of plugins that are gone keep their values and are stale.
	connected := r.connectedNames()
	for name := range parts {
		if !answered[name] && !connected[name] {
			stale[name] = "plugin not connected"
		}
	}
	rec, err := r.mergeStatus(last, parts, stale)
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

// mergeStatus merges the parts. When a plugin's new part does not merge
// (it conflicts with another plugin's, routes through an interface no part
// has, or drops the interface another plugin's route uses), the plugin
// whose part changed keeps its old part and is marked stale with the
// reason. Parts that do not merge although none changed (a record the
// runtime stored inconsistently) leave the stored record as it was, with
// the plugins involved marked stale. A status round never fails because
// of what a plugin reported.
func (r *Runtime) mergeStatus(last *api.PodNetworkRecord, parts map[string]*api.PodSandboxNetwork, stale map[string]string) (*api.PodNetworkRecord, error) {
	oldParts := partsOf(last)
	changed := func(name string) bool { return !proto.Equal(parts[name], oldParts[name]) }
	stored := func(why string, plugins ...string) *api.PodNetworkRecord {
		for _, name := range plugins {
			stale[name] = why
		}
		out := proto.CloneOf(last)
		if out == nil {
			out = &api.PodNetworkRecord{}
		}
		return out
	}
	for range len(parts) + 1 {
		rec, _, err := merge.Networks(ordered(parts), r.cfg.conflictPolicy, r.cfg.familyPreference)
		if err == nil {
			return rec, nil
		}
		// The plugins that may be at fault, most likely first.
		var suspects []string
		why := "reported a network that does not merge: "
		var cerr *ConflictError
		var rerr *RouteInterfaceError
		switch {
		case errors.As(err, &cerr):
			suspects = []string{cerr.Plugin, cerr.Owner}
			why = "reported a conflicting network: "
		case errors.As(err, &rerr):
			// The route's plugin, or one that dropped the interface.
			suspects = []string{rerr.Plugin}
			for _, name := range slices.Sorted(maps.Keys(oldParts)) {
				if slices.ContainsFunc(oldParts[name].GetInterfaces(), func(i *api.NetworkInterface) bool { return i.GetName() == rerr.Interface }) {
					suspects = append(suspects, name)
				}
			}
		default:
			return nil, err
		}
		i := slices.IndexFunc(suspects, changed)
		if i < 0 {
			// Neither changed: the stored record itself does not merge.
			return stored("stored part does not merge: "+err.Error(), suspects...), nil
		}
		culprit := suspects[i]
		stale[culprit] = why + err.Error()
		if old, ok := oldParts[culprit]; ok {
			parts[culprit] = old
		} else {
			delete(parts, culprit)
		}
	}
	var all []string
	for name := range parts {
		if changed(name) {
			all = append(all, name)
		}
	}
	return stored("the plugins' new parts do not merge", all...), nil
}

// statusNetwork reads a plugin's answer to PodSandboxStatus: its network,
// validated, or, when it sent none, its ip and additional_ips (PR #267's
// fields) as network.ips. An empty answer means the plugin reports
// nothing.
func statusNetwork(plugin string, rsp *api.PodSandboxStatusResponse) (*api.PodSandboxNetwork, error) {
	n := rsp.GetNetwork()
	if n == nil && (rsp.GetIp() != "" || len(rsp.GetAdditionalIps()) > 0) {
		n = &api.PodSandboxNetwork{}
		if rsp.GetIp() != "" {
			n.Ips = append(n.Ips, rsp.GetIp())
		}
		n.Ips = append(n.Ips, rsp.GetAdditionalIps()...)
	}
	return normalizePluginNetwork(plugin, "PodSandboxStatus", n)
}

// staleWarnInterval is how often a plugin whose status answers keep
// failing is reported at warning level; the failures in between are
// logged at debug level and counted in the next warning.
const staleWarnInterval = time.Minute

// warnStale reports that a status round kept the plugin's last known part
// of a pod's network, at most once per staleWarnInterval at warning
// level.
func (p *plugin) warnStale(pod *api.PodSandbox, reason error) {
	now := time.Now()
	p.mu.Lock()
	warn := p.staleWarned.IsZero() || now.Sub(p.staleWarned) >= staleWarnInterval
	suppressed := p.staleSuppressed
	if warn {
		p.staleWarned, p.staleSuppressed = now, 0
	} else {
		p.staleSuppressed++
	}
	log := p.log
	p.mu.Unlock()
	if warn {
		log.Warn("PodSandboxStatus: keeping the plugin's last known part of the pod network",
			"pod", podName(pod), "sandbox", pod.GetId(), "reason", reason, "suppressedSinceLastWarning", suppressed, "nextWarningIn", staleWarnInterval)
		return
	}
	log.Debug("PodSandboxStatus: keeping the plugin's last known part of the pod network", "pod", podName(pod), "sandbox", pod.GetId(), "reason", reason)
}
