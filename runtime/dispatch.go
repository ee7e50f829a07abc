package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/nrinet/nrinet/api"
)

// stateChangeEvents may be delivered through the deprecated StateChange
// RPC to plugins built before NRI v0.12, which lack the dedicated RPC.
var stateChangeEvents = api.MaskFor(
	api.Event_RUN_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX, api.Event_STOP_POD_SANDBOX,
	api.Event_REMOVE_POD_SANDBOX, api.Event_POST_CREATE_CONTAINER, api.Event_START_CONTAINER,
	api.Event_POST_START_CONTAINER, api.Event_POST_UPDATE_CONTAINER, api.Event_REMOVE_CONTAINER,
)

// relay sends req, the request of event ev, to every plugin subscribed
// to ev, in invocation order, stopping at the first failure; the answers
// are empty. pod and ctr are used for the StateChange fallback. Plugins
// joining meanwhile get the event once they have synchronized.
func (r *Runtime) relay(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, req api.VTMessage) error {
	method := ev.Method()
	return r.each(ctx, ev, pod, ctr, func(ctx context.Context, p *plugin) (func() error, error) {
		_, err := rpc[api.Empty](ctx, p, method, req)
		return nil, err
	}, req, nil)
}

// each calls the plugins subscribed to ev in order (pod and ctr are for
// the StateChange fallback) and merges each answer with the function the
// call returned: outside the call, so that a merge conflict is the
// request's error, not the plugin's failure. then, if not nil, runs last,
// as part of the request (validation). Plugins joining meanwhile get the
// event, made with req, once they have synchronized (see late).
func (r *Runtime) each(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container,
	call func(context.Context, *plugin) (func() error, error), req api.VTMessage, then func() error) error {
	rq, err := r.begin(ctx, ev, pod, ctr, req)
	if err != nil {
		return err
	}
	defer rq.end()
	for _, p := range rq.plugins {
		var apply func() error
		v, _, err := p.call(ctx, ev, pod, ctr, lifecycle, func(ctx context.Context, p *plugin) error {
			var err error
			apply, err = call(ctx, p)
			return err
		})
		switch {
		case v == fail:
			return err
		case v == skip || apply == nil:
			continue // dropped by the failure policy, or nothing to merge
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

// call makes the request of event ev to p with the request timeout
// (through the deprecated StateChange for plugins that lack the RPC) and
// applies the failure policy for stake s to its outcome, which it returns
// too.
func (p *plugin) call(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, s stake, fn func(context.Context, *plugin) error) (verdict, outcome, error) {
	method := ev.Method()
	viaStateChange := p.usesStateChange(ev)
	if viaStateChange {
		fn = stateChange(ev, pod, ctr)
	}
	o, err := p.invoke(ctx, method, p.r.cfg.requestTimeout, fn)
	if o == answered && errUnimplemented(err) && stateChangeEvents.IsSet(ev) && !viaStateChange {
		p.logger().Warn("plugin lacks the dedicated RPC; using the deprecated StateChange for this event", "event", method)
		p.mu.Lock()
		p.fallback = p.fallback.Set(ev)
		p.mu.Unlock()
		if d := p.r.deprecated; d != nil {
			d.PluginDeprecation(p.fullName(), "StateChange", "plugin lacks "+method+"; using the deprecated StateChange")
		}
		return p.call(ctx, ev, pod, ctr, s, fn)
	}
	v, err := p.settle(method, s, o, err)
	return v, o, err
}

// failurePolicy returns the policy the plugin asked for in Configure.
func (p *plugin) failurePolicy() *api.FailurePolicy {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.policy
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
	err := r.relay(ctx, api.Event_UPDATE_POD_SANDBOX, req.GetPod(), nil, req)
	if err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox relays that a pod update was applied.
func (r *Runtime) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) error {
	return r.relay(ctx, api.Event_POST_UPDATE_POD_SANDBOX, req.GetPod(), nil, req)
}

// StopPodSandbox relays the stop of a pod sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) error {
	r.forgetStatus(req.GetPod().GetId())
	return r.relay(ctx, api.Event_STOP_POD_SANDBOX, req.GetPod(), nil, req)
}

// RemovePodSandbox relays the removal of a pod sandbox.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) error {
	r.forgetStatus(req.GetPod().GetId())
	return r.relay(ctx, api.Event_REMOVE_POD_SANDBOX, req.GetPod(), nil, req)
}

// PostCreateContainer relays that a container was created.
func (r *Runtime) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) error {
	return r.relay(ctx, api.Event_POST_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), req)
}

// StartContainer relays that a container is about to start.
func (r *Runtime) StartContainer(ctx context.Context, req *api.StartContainerRequest) error {
	return r.relay(ctx, api.Event_START_CONTAINER, req.GetPod(), req.GetContainer(), req)
}

// PostStartContainer relays that a container started.
func (r *Runtime) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) error {
	return r.relay(ctx, api.Event_POST_START_CONTAINER, req.GetPod(), req.GetContainer(), req)
}

// PostUpdateContainer relays that a container update was applied.
func (r *Runtime) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) error {
	return r.relay(ctx, api.Event_POST_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), req)
}

// RemoveContainer relays the removal of a container.
func (r *Runtime) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) error {
	return r.relay(ctx, api.Event_REMOVE_CONTAINER, req.GetPod(), req.GetContainer(), req)
}

// reply is one plugin's answer in a fan-out, after the failure policy.
type reply[T any] struct {
	val     T // the answer, if verdict is useAnswer
	verdict verdict
	err     error // why the plugin was skipped or failed the request
}

// fanout calls plugins concurrently, each under timeout, and settles each
// call under the failure policy for stake s. It returns by the deadline,
// whatever the plugins do (see invoke).
func fanout[T any](ctx context.Context, plugins []*plugin, method string, timeout time.Duration, s stake, fn func(context.Context, *plugin) (T, error)) []reply[T] {
	out := make([]reply[T], len(plugins))
	one := func(i int, p *plugin) {
		var val T
		o, err := p.invoke(ctx, method, timeout, func(ctx context.Context, p *plugin) error {
			var err error
			val, err = fn(ctx, p)
			return err
		})
		v, err := p.settle(method, s, o, err)
		out[i] = reply[T]{verdict: v, err: err}
		if v == useAnswer {
			out[i].val = val
		}
	}
	if len(plugins) == 1 {
		one(0, plugins[0])
		return out
	}
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Go(func() { one(i, p) })
	}
	wg.Wait()
	return out
}
