package stub

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"
)

// Plugin is what New takes: any value implementing at least one of the
// event interfaces below (RunPodInterface, CreateContainerInterface, ...).
// ConfigureInterface, SynchronizeInterface and ShutdownInterface are
// optional extras and do not count as event handlers.
type Plugin interface{}

// ConfigureInterface is implemented by a plugin that wants its
// configuration. The runtime's name and version come with it; a non-zero
// mask narrows the subscription to those events, which the plugin must
// handle, and zero keeps every event the plugin handles.
type ConfigureInterface interface {
	Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
}

// SynchronizeInterface is implemented by a plugin that wants the pods and
// containers that exist when it joins. It may return updates for them.
type SynchronizeInterface interface {
	Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error)
}

// ShutdownInterface is implemented by a plugin that wants to know when the
// runtime shuts it down.
type ShutdownInterface interface {
	Shutdown(context.Context)
}

// RunPodInterface handles the creation of a pod sandbox.
type RunPodInterface interface {
	RunPodSandbox(context.Context, *api.PodSandbox) error
}

// UpdatePodInterface handles a change of a pod's resources: the pod,
// its overhead and its resources.
type UpdatePodInterface interface {
	UpdatePodSandbox(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error
}

// StopPodInterface handles the stop of a pod sandbox.
type StopPodInterface interface {
	StopPodSandbox(context.Context, *api.PodSandbox) error
}

// RemovePodInterface handles the removal of a pod sandbox.
type RemovePodInterface interface {
	RemovePodSandbox(context.Context, *api.PodSandbox) error
}

// PostUpdatePodInterface is told that a pod update was applied.
type PostUpdatePodInterface interface {
	PostUpdatePodSandbox(context.Context, *api.PodSandbox) error
}

// CreateContainerInterface may adjust a container being created and
// update other containers.
type CreateContainerInterface interface {
	CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
}

// StartContainerInterface handles a container about to start.
type StartContainerInterface interface {
	StartContainer(context.Context, *api.PodSandbox, *api.Container) error
}

// UpdateContainerInterface may change the resources of a container update
// (its update for the container replaces the requested one) and update
// other containers.
type UpdateContainerInterface interface {
	UpdateContainer(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, error)
}

// StopContainerInterface handles the stop of a container and may update
// other containers.
type StopContainerInterface interface {
	StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error)
}

// RemoveContainerInterface handles the removal of a container.
type RemoveContainerInterface interface {
	RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error
}

// PostCreateContainerInterface is told that a container was created.
type PostCreateContainerInterface interface {
	PostCreateContainer(context.Context, *api.PodSandbox, *api.Container) error
}

// PostStartContainerInterface is told that a container started.
type PostStartContainerInterface interface {
	PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error
}

// PostUpdateContainerInterface is told that a container update was
// applied.
type PostUpdateContainerInterface interface {
	PostUpdateContainer(context.Context, *api.PodSandbox, *api.Container) error
}

// ValidateContainerAdjustmentInterface validates the merged adjustment of
// a container being created. An error rejects the container, with the
// error's text as the reason.
type ValidateContainerAdjustmentInterface interface {
	ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error
}

// handledEvents returns the events p has an interface for.
func handledEvents(p any) api.EventMask {
	var m api.EventMask
	for _, h := range []struct {
		ok bool
		e  api.Event
	}{
		{is[RunPodInterface](p), api.Event_RUN_POD_SANDBOX},
		{is[UpdatePodInterface](p), api.Event_UPDATE_POD_SANDBOX},
		{is[PostUpdatePodInterface](p), api.Event_POST_UPDATE_POD_SANDBOX},
		{is[StopPodInterface](p), api.Event_STOP_POD_SANDBOX},
		{is[RemovePodInterface](p), api.Event_REMOVE_POD_SANDBOX},
		{is[CreateContainerInterface](p), api.Event_CREATE_CONTAINER},
		{is[PostCreateContainerInterface](p), api.Event_POST_CREATE_CONTAINER},
		{is[StartContainerInterface](p), api.Event_START_CONTAINER},
		{is[PostStartContainerInterface](p), api.Event_POST_START_CONTAINER},
		{is[UpdateContainerInterface](p), api.Event_UPDATE_CONTAINER},
		{is[PostUpdateContainerInterface](p), api.Event_POST_UPDATE_CONTAINER},
		{is[StopContainerInterface](p), api.Event_STOP_CONTAINER},
		{is[RemoveContainerInterface](p), api.Event_REMOVE_CONTAINER},
		{is[ValidateContainerAdjustmentInterface](p), api.Event_VALIDATE_CONTAINER_ADJUSTMENT},
	} {
		if h.ok {
			m.Set(h.e)
		}
	}
	return m
}

func is[I any](p any) bool {
	_, ok := p.(I)
	return ok
}

// subscription returns the events a plugin handling handled subscribes to
// when its Configure returned requested (or when it has no Configure, for
// requested 0): all it handles for 0, else requested, which must be a
// subset of handled.
func subscription(handled, requested api.EventMask) (api.EventMask, error) {
	if requested == 0 {
		return handled, nil
	}
	if extra := requested &^ handled; extra != 0 {
		return 0, fmt.Errorf("subscribed to events the plugin has no handler for: %s (0x%x)", extra.PrettyString(), uint32(extra))
	}
	return requested, nil
}
