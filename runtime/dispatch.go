package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
)

// stateChangeEvents may be delivered through the deprecated StateChange
// RPC to plugins built before NRI v0.12, which lack the dedicated RPC.
var stateChangeEvents = api.MaskFor(
	api.Event_RUN_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX, api.Event_STOP_POD_SANDBOX,
	api.Event_REMOVE_POD_SANDBOX, api.Event_POST_CREATE_CONTAINER, api.Event_START_CONTAINER,
	api.Event_POST_START_CONTAINER, api.Event_POST_UPDATE_CONTAINER, api.Event_REMOVE_CONTAINER,
)

// relay calls fn for every plugin subscribed to ev, in invocation order,
// stopping at the first plugin error. pod and ctr are used for the
// StateChange fallback.
func (r *Runtime) relay(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, fn func(context.Context, *plugin) error) error {
	return r.each(ctx, ev, pod, ctr, func(ctx context.Context, p *plugin) (func() error, error) {
		return nil, fn(ctx, p)
	}, nil)
}

// each calls the plugins subscribed to ev in order (pod and ctr are for
// the StateChange fallback), with plugin synchronization held off, and
// merges each answer with the function the call returned: outside the
// call, so that a merge conflict is the request's error, not the plugin's
// failure. then, if not nil, runs last, still with synchronization held
// off (validation).
func (r *Runtime) each(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, call func(context.Context, *plugin) (func() error, error), then func() error) error {
	r.syncMu.RLock()
	defer r.syncMu.RUnlock()
	if r.isStopped() {
		return ErrClosed
	}
	for _, p := range r.subscribed(ev) {
		var apply func() error
		err := p.call(ctx, ev, pod, ctr, func(ctx context.Context, p *plugin) error {
			var err error
			apply, err = call(ctx, p)
			return err
		})
		if err != nil {
			return err
		}
		if apply == nil {
			continue // nothing to merge: a relay, or the plugin was dropped
		}
		if err := apply(); err != nil {
			return err
		}
	}
	if then != nil {
		return then()
	}
	return nil
}

func (r *Runtime) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// call makes one request to the plugin with the request timeout and sorts
// out the failure: the caller's cancellation is returned as is; a timeout
// or broken connection drops the plugin (and fails the request only if the
// plugin's failure policy says so); an error from the plugin fails the
// request as a *PluginError.
func (p *plugin) call(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, fn func(context.Context, *plugin) error) error {
	if p.usesStateChange(ev) {
		fn = stateChange(ev, pod, ctr)
	}
	cctx, cancel := context.WithTimeout(ctx, p.r.cfg.requestTimeout)
	start := time.Now()
	err := fn(cctx, p)
	p.r.cfg.observer.PluginCall(p.fullName(), ev.Method(), time.Since(start), err)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The caller gave up: not the plugin's fault, so it stays.
		return &PluginError{Plugin: p.fullName(), Method: ev.Method(), Err: ctx.Err()}
	}
	if status.Code(err) == codes.Unimplemented && stateChangeEvents.IsSet(ev) && !p.usesStateChange(ev) {
		p.logger().Warn("plugin lacks the dedicated RPC; using the deprecated StateChange for this event", "event", ev.Method())
		p.mu.Lock()
		p.fallback = p.fallback.Set(ev)
		p.mu.Unlock()
		return p.call(ctx, ev, pod, ctr, fn)
	}
	perr := &PluginError{Plugin: p.fullName(), Method: ev.Method(), Err: err}
	timedOut := errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
	if !timedOut && !isTransportError(err) && !p.isClosed() && p.mux.Err() == nil {
		return perr
	}
	p.mu.Lock()
	policy := p.policy
	p.mu.Unlock()
	if timedOut && policy.GetKeepConnected() {
		p.logger().Warn("plugin timed out; keeping it connected as its failure policy asks",
			"event", ev.Method(), "timeout", p.r.cfg.requestTimeout)
	} else {
		p.close(fmt.Errorf("failed to handle %s: %w", ev.Method(), err))
	}
	if policy.GetFailRequest() {
		return perr
	}
	return nil
}

// keepsConnected reports whether the plugin's failure policy asks to stay
// connected after a timeout.
func (p *plugin) keepsConnected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.policy.GetKeepConnected()
}

func (p *plugin) usesStateChange(ev api.Event) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fallback.IsSet(ev)
}

// stateChange delivers ev through the deprecated StateChange RPC.
func stateChange(ev api.Event, pod *api.PodSandbox, ctr *api.Container) func(context.Context, *plugin) error {
	return func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.Empty](ctx, p, "StateChange", &api.StateChangeEvent{Event: ev, Pod: pod, Container: ctr})
		return err
	}
}

// UpdatePodSandbox relays a change of a pod's resources.
func (r *Runtime) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	err := r.relay(ctx, api.Event_UPDATE_POD_SANDBOX, req.GetPod(), nil, func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.UpdatePodSandboxResponse](ctx, p, "UpdatePodSandbox", req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox relays that a pod update was applied.
func (r *Runtime) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) error {
	return r.relay(ctx, api.Event_POST_UPDATE_POD_SANDBOX, req.GetPod(), nil, func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.PostUpdatePodSandboxResponse](ctx, p, "PostUpdatePodSandbox", req)
		return err
	})
}

// StopPodSandbox relays the stop of a pod sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) error {
	r.forgetStatus(req.GetPod().GetId())
	return r.relay(ctx, api.Event_STOP_POD_SANDBOX, req.GetPod(), nil, func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.StopPodSandboxResponse](ctx, p, "StopPodSandbox", req)
		return err
	})
}

// RemovePodSandbox relays the removal of a pod sandbox.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) error {
	r.forgetStatus(req.GetPod().GetId())
	return r.relay(ctx, api.Event_REMOVE_POD_SANDBOX, req.GetPod(), nil, func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.RemovePodSandboxResponse](ctx, p, "RemovePodSandbox", req)
		return err
	})
}

// PostCreateContainer relays that a container was created.
func (r *Runtime) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) error {
	return r.relay(ctx, api.Event_POST_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.PostCreateContainerResponse](ctx, p, "PostCreateContainer", req)
		return err
	})
}

// StartContainer relays that a container is about to start.
func (r *Runtime) StartContainer(ctx context.Context, req *api.StartContainerRequest) error {
	return r.relay(ctx, api.Event_START_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.StartContainerResponse](ctx, p, "StartContainer", req)
		return err
	})
}

// PostStartContainer relays that a container started.
func (r *Runtime) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) error {
	return r.relay(ctx, api.Event_POST_START_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.PostStartContainerResponse](ctx, p, "PostStartContainer", req)
		return err
	})
}

// PostUpdateContainer relays that a container update was applied.
func (r *Runtime) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) error {
	return r.relay(ctx, api.Event_POST_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.PostUpdateContainerResponse](ctx, p, "PostUpdateContainer", req)
		return err
	})
}

// RemoveContainer relays the removal of a container.
func (r *Runtime) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) error {
	return r.relay(ctx, api.Event_REMOVE_CONTAINER, req.GetPod(), req.GetContainer(), func(ctx context.Context, p *plugin) error {
		_, err := rpc[api.RemoveContainerResponse](ctx, p, "RemoveContainer", req)
		return err
	})
}
