package plugin

import (
	"context"

	"github.com/nrinet/nrinet/api"
)

// ConfigureHandler is called once per connection with the plugin's
// configuration (set only for plugins the runtime launched) and the
// runtime's name and version. It returns the events to subscribe to; zero
// means every event the plugin has a handler for. A stub that reconnects
// (WithReconnect) calls it again on every new connection, possibly with
// another runtime's configuration. RuntimeInfoFromContext(ctx) gives the
// rest of the runtime's request (its NRI version, the timeouts). A stub
// built with WithRequiredNetworkExtension does not call it for a runtime
// it refuses.
type ConfigureHandler interface {
	Configure(ctx context.Context, config, runtimeName, runtimeVersion string) (api.EventMask, error)
}

// SynchronizeHandler receives the pods and containers that exist when the
// plugin joins (reassembled if the runtime sent them in several chunks) and
// may return updates for existing containers. It is called again each time
// a reconnecting stub (WithReconnect) joins, with the whole state once
// more: pods the plugin knows of that are missing from it were removed
// while the plugin was away.
type SynchronizeHandler interface {
	Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error)
}

// ShutdownHandler is called when the runtime shuts the plugin down,
// usually because the runtime itself is stopping. A stub that reconnects
// (WithReconnect) keeps running afterwards and joins the runtime when it
// is back.
type ShutdownHandler interface {
	Shutdown(ctx context.Context)
}

// RunPodSandboxHandler handles the creation of a pod sandbox.
type RunPodSandboxHandler interface {
	RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// RunPodSandboxNetworkHandler handles the creation of a pod sandbox and
// returns the pod's network as this plugin set it up (nil for none): the
// pod network extension's variant of RunPodSandboxHandler. A plugin
// implements one or the other. Against a runtime without the extension it
// is still called, and the network it returns is dropped. It is not called
// for a pod whose network the runtime sets up itself
// (RunPodSandboxRequest.runtime_owns_network: a runtime with pods of its
// own network and pods of the plugins' at once): the plugin hears of such
// a pod only from its StopPodSandbox, RemovePodSandbox and Synchronize.
type RunPodSandboxNetworkHandler interface {
	RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error)
}

// PodSandboxStatusHandler reports this plugin's part of a pod's network
// when the runtime asks (pod network extension). With verbose the plugin
// should check, not just recall, and may add details to the network's
// info map. It is only called by runtimes that support the extension.
type PodSandboxStatusHandler interface {
	PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, verbose bool) (*api.PodSandboxNetwork, error)
}

// UpdatePodSandboxHandler handles a change of a pod's resources.
type UpdatePodSandboxHandler interface {
	UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error
}

// PostUpdatePodSandboxHandler is told that a pod update was applied.
type PostUpdatePodSandboxHandler interface {
	PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// StopPodSandboxHandler handles the stop of a pod sandbox.
type StopPodSandboxHandler interface {
	StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// RemovePodSandboxHandler handles the removal of a pod sandbox.
type RemovePodSandboxHandler interface {
	RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// CreateContainerHandler may adjust a container being created and update
// other containers.
type CreateContainerHandler interface {
	CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
}

// CreateContainerEvictHandler is the variant of CreateContainerHandler
// for a plugin that may also ask the runtime to evict containers, for
// instance to make room for the new one. nrinet runtimes deliver the
// evictions; containerd's ignore them. A plugin implements one or the
// other.
type CreateContainerEvictHandler interface {
	CreateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
}

// PostCreateContainerHandler is told that a container was created.
type PostCreateContainerHandler interface {
	PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// StartContainerHandler handles a container about to start.
type StartContainerHandler interface {
	StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// PostStartContainerHandler is told that a container started.
type PostStartContainerHandler interface {
	PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// UpdateContainerHandler may change the resources requested for a
// container update and update other containers.
type UpdateContainerHandler interface {
	UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, error)
}

// UpdateContainerEvictHandler is the variant of UpdateContainerHandler
// for a plugin that may also ask the runtime to evict containers.
type UpdateContainerEvictHandler interface {
	UpdateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
}

// PostUpdateContainerHandler is told that a container update was applied.
type PostUpdateContainerHandler interface {
	PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// StopContainerHandler handles the stop of a container and may update
// other containers.
type StopContainerHandler interface {
	StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error)
}

// RemoveContainerHandler handles the removal of a container.
type RemoveContainerHandler interface {
	RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// ValidateContainerAdjustmentHandler validates the merged adjustment of a
// container being created. A returned error rejects the container, with
// the error text as the reason.
type ValidateContainerAdjustmentHandler interface {
	ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
}

// implementedEvents returns the events p has a handler for.
func implementedEvents(p any) api.EventMask {
	var m api.EventMask
	add := func(ok bool, e api.Event) {
		if ok {
			m = m.Set(e)
		}
	}
	_, ok := p.(RunPodSandboxHandler)
	add(ok, api.Event_RUN_POD_SANDBOX)
	_, ok = p.(RunPodSandboxNetworkHandler)
	add(ok, api.Event_RUN_POD_SANDBOX)
	_, ok = p.(PodSandboxStatusHandler)
	add(ok, api.Event_POD_SANDBOX_STATUS)
	_, ok = p.(StopPodSandboxHandler)
	add(ok, api.Event_STOP_POD_SANDBOX)
	_, ok = p.(RemovePodSandboxHandler)
	add(ok, api.Event_REMOVE_POD_SANDBOX)
	_, ok = p.(CreateContainerHandler)
	add(ok, api.Event_CREATE_CONTAINER)
	_, ok = p.(CreateContainerEvictHandler)
	add(ok, api.Event_CREATE_CONTAINER)
	_, ok = p.(PostCreateContainerHandler)
	add(ok, api.Event_POST_CREATE_CONTAINER)
	_, ok = p.(StartContainerHandler)
	add(ok, api.Event_START_CONTAINER)
	_, ok = p.(PostStartContainerHandler)
	add(ok, api.Event_POST_START_CONTAINER)
	_, ok = p.(UpdateContainerHandler)
	add(ok, api.Event_UPDATE_CONTAINER)
	_, ok = p.(UpdateContainerEvictHandler)
	add(ok, api.Event_UPDATE_CONTAINER)
	_, ok = p.(PostUpdateContainerHandler)
	add(ok, api.Event_POST_UPDATE_CONTAINER)
	_, ok = p.(StopContainerHandler)
	add(ok, api.Event_STOP_CONTAINER)
	_, ok = p.(RemoveContainerHandler)
	add(ok, api.Event_REMOVE_CONTAINER)
	_, ok = p.(UpdatePodSandboxHandler)
	add(ok, api.Event_UPDATE_POD_SANDBOX)
	_, ok = p.(PostUpdatePodSandboxHandler)
	add(ok, api.Event_POST_UPDATE_POD_SANDBOX)
	_, ok = p.(ValidateContainerAdjustmentHandler)
	add(ok, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	return m
}
