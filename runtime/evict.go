package runtime

import (
	"context"

	"github.com/nrinet/nrinet/api"
)

// EvictFunc evicts containers a plugin asked to be evicted: in its answer
// to CreateContainer or UpdateContainer (called once the request
// succeeded; the evictions are also in the request's response), or in
// UpdateContainers (called on a goroutine of the Runtime, after the plugin
// got its answer). plugin is the plugin's full
// name. It may call the Runtime. An error is logged.
type EvictFunc func(ctx context.Context, plugin string, evictions []*api.ContainerEviction) error

// eviction is what one plugin asked to evict during a request.
type eviction struct {
	plugin string
	list   []*api.ContainerEviction
}

func collectEvictions(to []eviction, p *plugin, list []*api.ContainerEviction) []eviction {
	if len(list) == 0 {
		return to
	}
	return append(to, eviction{plugin: p.fullName(), list: list})
}

// deliverEvictions hands the evictions of a successful request to the
// EvictFunc, in plugin order. Without one they are logged, never dropped
// silently.
func (r *Runtime) deliverEvictions(ctx context.Context, evictions []eviction) {
	for _, e := range evictions {
		if err := r.evict(ctx, e.plugin, e.list); err != nil {
			r.log.Warn("evicting containers failed", "plugin", e.plugin, "evictions", describeEvictions(e.list), "error", err)
		}
	}
}

// evict hands one plugin's evictions to the EvictFunc.
func (r *Runtime) evict(ctx context.Context, plugin string, list []*api.ContainerEviction) error {
	if r.cfg.evict == nil {
		r.log.Warn("plugin asked to evict containers, but the runtime has no EvictFunc", "plugin", plugin, "evictions", describeEvictions(list))
		return errNoEvictFunc
	}
	return r.cfg.evict(ctx, plugin, list)
}

// describeEvictions renders evictions for a log record: "id (reason)".
func describeEvictions(list []*api.ContainerEviction) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.GetContainerId() + " (" + e.GetReason() + ")"
	}
	return out
}

// requestEvictions handles the evictions plugins asked for in a request
// that succeeded: they are returned in the response, in plugin order, and
// handed to the EvictFunc, if there is one.
func (r *Runtime) requestEvictions(ctx context.Context, evictions []eviction) []*api.ContainerEviction {
	if len(evictions) == 0 {
		return nil
	}
	var out []*api.ContainerEviction
	for _, e := range evictions {
		out = append(out, e.list...)
	}
	if r.cfg.evict != nil {
		r.deliverEvictions(ctx, evictions)
	}
	return out
}

// goEvict delivers evictions a plugin sent in UpdateContainers on a
// goroutine the Runtime waits for at Stop.
func (r *Runtime) goEvict(plugin string, list []*api.ContainerEviction) {
	if !r.track() {
		r.log.Warn("runtime stopping; evictions not delivered", "plugin", plugin, "evictions", describeEvictions(list))
		return
	}
	go func() {
		defer r.wg.Done()
		r.deliverEvictions(r.ctx, []eviction{{plugin: plugin, list: list}})
	}()
}
