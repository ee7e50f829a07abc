package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// CreateContainer relays the creation of a container. Each plugin sees the
// container with the adjustments of the plugins before it applied; the
// response holds the merged adjustment and the merged updates of other
// containers. When validating plugins are present they must all accept the
// result. req is not modified.
func (r *Runtime) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	id := req.GetContainer().GetId()
	o := newOwners()
	adj := newAdjustment(o, req.GetContainer())
	ups := newUpdates(o)
	r.syncMu.RLock()
	defer r.syncMu.RUnlock()
	if r.isStopped() {
		return nil, ErrClosed
	}
	for _, p := range r.subscribed(api.Event_CREATE_CONTAINER) {
		var rsp *api.CreateContainerResponse
		err := p.call(ctx, api.Event_CREATE_CONTAINER, nil, nil, func(ctx context.Context, p *plugin) error {
			var err error
			rsp, err = rpc[api.CreateContainerResponse](ctx, p, "CreateContainer", &api.CreateContainerRequest{Pod: req.GetPod(), Container: adj.view})
			return err
		})
		if err != nil {
			return nil, err
		}
		if rsp == nil {
			continue // plugin dropped, request goes on
		}
		for _, u := range rsp.GetUpdate() {
			if u.GetContainerId() == id {
				return nil, &PluginError{Plugin: p.fullName(), Method: "CreateContainer",
					Err: fmt.Errorf("asked to update container %q, which is being created; adjust it instead", id)}
			}
		}
		if err := adj.apply(p.fullName(), rsp.GetAdjust()); err != nil {
			return nil, err
		}
		if err := ups.apply(p.fullName(), rsp.GetUpdate()); err != nil {
			return nil, err
		}
	}
	out := &api.CreateContainerResponse{Adjust: adj.merged, Update: ups.list("")}
	if err := r.validate(ctx, req, out, o); err != nil {
		return nil, err
	}
	return out, nil
}

// validate asks every validating plugin, concurrently, to accept the merged
// result of a CreateContainer. Any rejection, error or failure to answer
// fails the request.
func (r *Runtime) validate(ctx context.Context, req *api.CreateContainerRequest, rsp *api.CreateContainerResponse, o *owners) error {
	validators := r.subscribed(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	if len(validators) == 0 {
		return nil
	}
	r.mu.Lock()
	instances := make([]*api.PluginInstance, 0, len(r.plugins))
	for _, p := range r.plugins {
		instances = append(instances, &api.PluginInstance{Name: p.name, Index: p.idx})
	}
	r.mu.Unlock()
	vreq := &api.ValidateContainerAdjustmentRequest{
		Pod:       req.GetPod(),
		Container: req.GetContainer(),
		Adjust:    rsp.GetAdjust(),
		Update:    rsp.GetUpdate(),
		Owners:    o.proto(),
		Plugins:   instances,
	}
	errs := make([]error, len(validators))
	var wg sync.WaitGroup
	for i, p := range validators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, r.cfg.requestTimeout)
			defer cancel()
			vrsp, err := rpc[api.ValidateContainerAdjustmentResponse](cctx, p, "ValidateContainerAdjustment", vreq)
			switch {
			case err != nil:
				if ctx.Err() == nil && (isTransportError(err) || cctx.Err() != nil) {
					p.close(fmt.Errorf("failed to handle ValidateContainerAdjustment: %w", err))
				}
				errs[i] = &PluginError{Plugin: p.fullName(), Method: "ValidateContainerAdjustment", Err: err}
			case vrsp.GetReject():
				reason := vrsp.GetReason()
				if reason == "" {
					reason = "no reason given"
				}
				errs[i] = fmt.Errorf("validator %q rejected the adjustment of container %q: %s", p.fullName(), req.GetContainer().GetId(), reason)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// UpdateContainer relays a requested resource update of a container. Each
// plugin sees the resources as changed by the plugins before it. The
// response lists the merged updates of other containers, then, if any
// plugin changed it, the target container's effective update.
func (r *Runtime) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	id := req.GetContainer().GetId()
	o := newOwners()
	ups := newUpdates(o)
	resources := req.GetLinuxResources()
	touched := false
	err := r.relay(ctx, api.Event_UPDATE_CONTAINER, nil, nil, func(ctx context.Context, p *plugin) error {
		rsp, err := rpc[api.UpdateContainerResponse](ctx, p, "UpdateContainer", &api.UpdateContainerRequest{
			Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: resources,
		})
		if err != nil {
			return err
		}
		if err := ups.apply(p.fullName(), rsp.GetUpdate()); err != nil {
			return err
		}
		if t := ups.byID[id]; t != nil && t.GetLinux().GetResources() != nil {
			merged := &api.LinuxResources{}
			if base := req.GetLinuxResources(); base != nil {
				merged = proto.CloneOf(base)
			}
			proto.Merge(merged, t.GetLinux().GetResources())
			resources, touched = merged, true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &api.UpdateContainerResponse{Update: ups.list(id)}
	if touched {
		target := ups.byID[id]
		target.Linux = &api.LinuxContainerUpdate{Resources: resources}
		out.Update = append(out.Update, target)
	}
	return out, nil
}

// StopContainer relays the stop of a container and returns the merged
// updates plugins asked for other containers.
func (r *Runtime) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	ups := newUpdates(newOwners())
	err := r.relay(ctx, api.Event_STOP_CONTAINER, nil, nil, func(ctx context.Context, p *plugin) error {
		rsp, err := rpc[api.StopContainerResponse](ctx, p, "StopContainer", req)
		if err != nil {
			return err
		}
		return ups.apply(p.fullName(), rsp.GetUpdate())
	})
	if err != nil {
		return nil, err
	}
	return &api.StopContainerResponse{Update: ups.list("")}, nil
}
