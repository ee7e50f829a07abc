package runtime

import (
	"context"
	"fmt"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// CreateContainer relays the creation of a container. Each plugin sees the
// container with the adjustments of the plugins before it applied; the
// response holds the merged adjustment and the merged updates of other
// containers (package merge has the rules). Then every validator, built
// in or plugin, must accept the result. Evictions plugins asked for are
// handed to the EvictFunc once the request succeeded. req is not
// modified.
func (r *Runtime) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	rsp, _, err := r.createContainer(ctx, req)
	return rsp, err
}

// CreateContainerWithOwners is CreateContainer that also returns who set
// what: for the created container and every container updated, the
// plugin that set each field ("-name" for a removal, "a,b" for OCI hooks),
// the record validators received. Runtimes keep it to answer "which
// plugin gave this container that".
func (r *Runtime) CreateContainerWithOwners(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, *api.OwningPlugins, error) {
	rsp, o, err := r.createContainer(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return rsp, o.Proto(), nil
}

func (r *Runtime) createContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, *merge.Owners, error) {
	if err := checkSizes(req.GetPod(), req.GetContainer()); err != nil {
		return nil, nil, fmt.Errorf("runtime: CreateContainer refused: %w", err)
	}
	o := merge.NewOwners()
	adj := merge.NewAdjustment(o, req.GetContainer())
	// What the request to the next plugin carries grows at most by what
	// the adjustments encode to: the exact size is computed only when
	// that bound comes near the limit.
	bound := req.GetPod().SizeVT() + req.GetContainer().SizeVT()
	ups := merge.NewUpdates(o).ForCreate(req.GetContainer().GetId())
	var (
		evictions []eviction
		out       *api.CreateContainerResponse
	)
	err := r.each(ctx, api.Event_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) (func() error, error) {
		rsp, err := rpc[api.CreateContainerResponse](ctx, p, "CreateContainer", &api.CreateContainerRequest{Pod: req.GetPod(), Container: adj.Container()})
		if err != nil {
			return nil, err
		}
		return func() error {
			if err := adj.Apply(p.fullName(), rsp.GetAdjust()); err != nil {
				return err
			}
			if a := rsp.GetAdjust(); a != nil {
				if bound += a.SizeVT() + adjustSlack; bound > maxRequestBody {
					if err := checkAdjustedSize(p, req.GetPod().SizeVT(), adj.Container()); err != nil {
						return err
					}
				}
			}
			if err := ups.Apply(p.fullName(), rsp.GetUpdate()); err != nil {
				return err
			}
			evictions = collectEvictions(evictions, p, rsp.GetEvict())
			if a := r.adjusted; a != nil {
				a.PluginAdjustment(p.fullName(), "CreateContainer", rsp.GetAdjust(), len(rsp.GetUpdate()), len(rsp.GetEvict()))
			}
			return nil
		}, nil
	}, req, func() error {
		out = &api.CreateContainerResponse{Adjust: adj.Result(), Update: ups.Others()}
		return r.validate(ctx, req, out, o)
	})
	if err != nil {
		return nil, nil, err
	}
	out.Evict = r.requestEvictions(ctx, evictions)
	return out, o, nil
}

// UpdateContainer relays a requested resource update of a container. Each
// plugin sees the resources as changed by the plugins before it. The
// response lists the merged updates of other containers, then, if any
// plugin changed it, the target container's update with its full
// effective resources.
func (r *Runtime) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	ups := merge.NewUpdates(merge.NewOwners()).ForUpdate(req.GetContainer().GetId(), req.GetLinuxResources())
	var evictions []eviction
	err := r.each(ctx, api.Event_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) (func() error, error) {
		rsp, err := rpc[api.UpdateContainerResponse](ctx, p, "UpdateContainer", &api.UpdateContainerRequest{
			Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: ups.Resources(),
		})
		if err != nil {
			return nil, err
		}
		return func() error {
			if err := ups.Apply(p.fullName(), rsp.GetUpdate()); err != nil {
				return err
			}
			evictions = collectEvictions(evictions, p, rsp.GetEvict())
			if a := r.adjusted; a != nil {
				a.PluginAdjustment(p.fullName(), "UpdateContainer", nil, len(rsp.GetUpdate()), len(rsp.GetEvict()))
			}
			return nil
		}, nil
	}, req, nil)
	if err != nil {
		return nil, err
	}
	out := &api.UpdateContainerResponse{Update: ups.Others()}
	if t, ok := ups.Target(); ok {
		out.Update = append(out.Update, t)
	}
	out.Evict = r.requestEvictions(ctx, evictions)
	return out, nil
}

// StopContainer relays the stop of a container and returns the merged
// updates plugins asked for other containers.
func (r *Runtime) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	ups := merge.NewUpdates(merge.NewOwners())
	err := r.each(ctx, api.Event_STOP_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) (func() error, error) {
		rsp, err := rpc[api.StopContainerResponse](ctx, p, "StopContainer", req)
		if err != nil {
			return nil, err
		}
		return func() error {
			if a := r.adjusted; a != nil {
				a.PluginAdjustment(p.fullName(), "StopContainer", nil, len(rsp.GetUpdate()), 0)
			}
			return ups.Apply(p.fullName(), rsp.GetUpdate())
		}, nil
	}, req, nil)
	if err != nil {
		return nil, err
	}
	return &api.StopContainerResponse{Update: ups.Others()}, nil
}

// lateUpdates applies what a plugin answered to an event delivered after
// the request was over (it joined meanwhile): updates of other containers
// and evictions, as if it had sent them with UpdateContainers, on a
// goroutine of the Runtime (the functions applying them may make
// requests, which may wait for the plugin to join).
func (r *Runtime) lateUpdates(p *plugin, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) {
	if len(updates) > 0 && r.track() {
		go func() {
			defer r.wg.Done()
			p.applySyncUpdates(r.ctx, updates)
		}()
	}
	if len(evictions) > 0 {
		r.goEvict(p.fullName(), evictions)
	}
}

// checkSizes refuses a pod or container larger than api.MaxObjectSize:
// it could not be sent to plugins, in requests or in Synchronize.
func checkSizes(pod *api.PodSandbox, ctr *api.Container) error {
	if err := api.CheckPodSize(pod); err != nil {
		return err
	}
	if ctr != nil {
		return api.CheckContainerSize(ctr)
	}
	return nil
}

// maxRequestBody is the most the objects of one request to a plugin (a
// pod and a container, an adjustment and its owners) may encode to: what
// ttrpc carries less room for the request's envelope.
const maxRequestBody = 2 * api.MaxObjectSize

// adjustSlack covers what an adjustment adds to a container beyond its
// own encoding (a field's tag and length, once).
const adjustSlack = 64

// checkAdjustedSize fails a CreateContainer whose container, as plugin p
// adjusted it, no longer fits with its pod in a request to the next
// plugin: the error names p and wraps api.ErrTooLarge.
func checkAdjustedSize(p *plugin, podSize int, ctr *api.Container) error {
	if n := podSize + ctr.SizeVT(); n > maxRequestBody {
		return fmt.Errorf("runtime: CreateContainer: the adjustments of plugin %q make the container too large to send on with its pod: %w",
			p.fullName(), &api.TooLargeError{What: "pod and adjusted container", ID: ctr.GetId(), Size: n, Limit: maxRequestBody})
	}
	return nil
}
