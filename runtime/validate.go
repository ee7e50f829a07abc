package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// Validator is a validator built into the runtime, such as
// [github.com/nrinet/nrinet/validator]: it takes part in the validation of
// every CreateContainer like a plugin subscribed to
// ValidateContainerAdjustment, without a process. An error rejects the
// container; its text is the reason. Validators run concurrently on one
// request and must not modify it.
type Validator interface {
	ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
}

// PodValidator is a Validator that also vets a pod before RunPodSandbox is
// relayed, given the plugins connected; the default validator checks
// there that the pod's required plugins are present. It must not modify
// pod or plugins.
type PodValidator interface {
	ValidatePodSandbox(ctx context.Context, pod *api.PodSandbox, plugins []*api.PluginInstance) error
}

// builtinValidator is a Validator with the name errors give it.
type builtinValidator struct {
	name string
	v    Validator
}

// RejectedError reports a validator rejecting a container's adjustment,
// or a pod.
type RejectedError struct {
	// Validator is the full name of the validating plugin, or the name a
	// built-in validator was given.
	Validator string
	// Container is the ID of the container being created; empty for a pod.
	Container string
	// Pod is the ID of the pod a PodValidator rejected.
	Pod string
	// Reason is the validator's reason.
	Reason string
	// Err is a built-in validator's error, which Reason renders; nil for
	// a validating plugin, whose reason is text.
	Err error
}

// Unwrap returns the built-in validator's error.
func (e *RejectedError) Unwrap() error { return e.Err }

func (e *RejectedError) Error() string {
	if e.Container == "" {
		return fmt.Sprintf("validator %q rejected pod %q: %s", e.Validator, e.Pod, e.Reason)
	}
	return fmt.Sprintf("validator %q rejected the adjustment of container %q: %s", e.Validator, e.Container, e.Reason)
}

// instances lists the connected plugins, as validators see them.
func (r *Runtime) instances() []*api.PluginInstance {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*api.PluginInstance, 0, len(r.plugins))
	for _, p := range r.plugins {
		if !p.isClosed() {
			out = append(out, &api.PluginInstance{Name: p.name, Index: p.idx})
		}
	}
	return out
}

// validate asks every validator, built-in and plugin, concurrently, to
// accept the merged result of a CreateContainer. Any rejection, error or
// failure to answer fails the request; a validating plugin that fails to
// answer is also disconnected, like a plugin failing a lifecycle request:
// a broken connection always, a timeout unless its failure policy asks to
// stay connected.
func (r *Runtime) validate(ctx context.Context, req *api.CreateContainerRequest, rsp *api.CreateContainerResponse, o *merge.Owners) error {
	plugins := r.subscribed(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	if len(plugins) == 0 && len(r.cfg.validators) == 0 {
		return nil
	}
	vreq := &api.ValidateContainerAdjustmentRequest{
		Pod:       req.GetPod(),
		Container: req.GetContainer(),
		Adjust:    rsp.GetAdjust(),
		Update:    rsp.GetUpdate(),
		Owners:    o.Proto(),
		Plugins:   r.instances(),
	}
	id := req.GetContainer().GetId()
	if n := vreq.SizeVT(); n > maxRequestBody {
		return fmt.Errorf("runtime: CreateContainer: the merged adjustment cannot be sent to validators: %w",
			&api.TooLargeError{What: "validation request of container", ID: id, Size: n, Limit: maxRequestBody})
	}
	errs := make([]error, 1+len(r.cfg.validators))
	var wg sync.WaitGroup
	wg.Go(func() {
		const method = "ValidateContainerAdjustment"
		replies := fanout(ctx, plugins, method, r.cfg.requestTimeout, validation,
			func(ctx context.Context, p *plugin) (*api.ValidateContainerAdjustmentResponse, error) {
				return rpc[api.ValidateContainerAdjustmentResponse](ctx, p, method, vreq)
			})
		var perrs []error
		for i, rp := range replies {
			switch {
			case rp.verdict != useAnswer:
				perrs = append(perrs, rp.err)
			case rp.val.GetReject():
				reason := rp.val.GetReason()
				if reason == "" {
					reason = "no reason given"
				}
				perrs = append(perrs, &RejectedError{Validator: plugins[i].fullName(), Container: id, Reason: reason})
			}
		}
		errs[0] = errors.Join(perrs...)
	})
	for j, b := range r.cfg.validators {
		wg.Go(func() {
			errs[1+j] = r.builtin(ctx, b.name, id, "", func(ctx context.Context) error {
				return b.v.ValidateContainerAdjustment(ctx, vreq)
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// builtin runs a built-in validator under the request timeout (see
// deadlined): one that fails, or answers after the deadline, rejects.
func (r *Runtime) builtin(ctx context.Context, name, container, pod string, fn func(context.Context) error) error {
	res := r.deadlined(ctx, r.cfg.requestTimeout, fn, nil)
	var err error
	switch {
	case !res.late:
		err = res.err
	case ctx.Err() != nil:
		err = fmt.Errorf("gave up waiting: %w", ctx.Err())
	default:
		err = lateError(r.cfg.requestTimeout)
	}
	if err == nil {
		return nil
	}
	return &RejectedError{Validator: name, Container: container, Pod: pod, Reason: err.Error(), Err: err}
}

// validatePod runs the built-in PodValidators before a RunPodSandbox.
func (r *Runtime) validatePod(ctx context.Context, pod *api.PodSandbox) error {
	var errs []error
	var plugins []*api.PluginInstance
	for _, b := range r.cfg.validators {
		pv, ok := b.v.(PodValidator)
		if !ok {
			continue
		}
		if plugins == nil {
			plugins = r.instances()
		}
		instances := plugins // a copy per closure: plugins itself stays on the stack
		errs = append(errs, r.builtin(ctx, b.name, "", pod.GetId(), func(ctx context.Context) error {
			return pv.ValidatePodSandbox(ctx, pod, instances)
		}))
	}
	return errors.Join(errs...)
}
