package adaptation

import (
	"context"
	"fmt"
	"net"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"

	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// A built-in plugin runs in the runtime's process, on nrinet's plugin
// library, connected to the runtime library over an in-memory pipe
// (runtime.Connect): it takes part in requests in index order like any
// other plugin.

// builtinPlugin is a started built-in plugin.
type builtinPlugin struct {
	stub *plugin.Stub
}

func (b *builtinPlugin) stop() { b.stub.Stop() }

// startBuiltin connects b to rt and waits until it has joined.
func startBuiltin(rt *runtime.Runtime, b *builtin.BuiltinPlugin) (*builtinPlugin, error) {
	if b == nil {
		return nil, fmt.Errorf("nil plugin")
	}
	runtimeEnd, pluginEnd := net.Pipe()
	stub, err := plugin.New(&builtinHandler{b: b},
		plugin.WithPluginName(b.Base), plugin.WithPluginIdx(b.Index),
		plugin.WithConnection(pluginEnd), plugin.WithEnv(func(string) string { return "" }, b.Base))
	if err != nil {
		runtimeEnd.Close()
		pluginEnd.Close()
		return nil, err
	}
	ctx := context.Background()
	started := make(chan error, 1)
	go func() { started <- stub.Start(ctx) }()
	if err := rt.Connect(ctx, runtimeEnd); err != nil {
		<-started
		stub.Stop()
		return nil, err
	}
	if err := <-started; err != nil {
		stub.Stop()
		return nil, err
	}
	return &builtinPlugin{stub: stub}, nil
}

// builtinHandler serves a built-in plugin's handlers through nrinet's
// plugin library: it implements every handler and subscribes, in
// Configure, to the events the plugin has a handler for (or to those its
// own Configure returns).
type builtinHandler struct{ b *builtin.BuiltinPlugin }

func (h *builtinHandler) Configure(ctx context.Context, config, runtimeName, runtimeVersion string) (nrinet.EventMask, error) {
	hs := &h.b.Handlers
	if hs.Configure != nil {
		rsp, err := hs.Configure(ctx, &api.ConfigureRequest{Config: config, RuntimeName: runtimeName, RuntimeVersion: runtimeVersion})
		if err != nil {
			return 0, err
		}
		if rsp.GetEvents() != 0 {
			return nrinet.EventMask(rsp.GetEvents()), nil
		}
	}
	var events []nrinet.Event
	for ev, set := range map[nrinet.Event]bool{
		nrinet.Event_RUN_POD_SANDBOX:               hs.RunPodSandbox != nil,
		nrinet.Event_STOP_POD_SANDBOX:              hs.StopPodSandbox != nil,
		nrinet.Event_REMOVE_POD_SANDBOX:            hs.RemovePodSandbox != nil,
		nrinet.Event_UPDATE_POD_SANDBOX:            hs.UpdatePodSandbox != nil,
		nrinet.Event_POST_UPDATE_POD_SANDBOX:       hs.PostUpdatePodSandbox != nil,
		nrinet.Event_CREATE_CONTAINER:              hs.CreateContainer != nil,
		nrinet.Event_POST_CREATE_CONTAINER:         hs.PostCreateContainer != nil,
		nrinet.Event_START_CONTAINER:               hs.StartContainer != nil,
		nrinet.Event_POST_START_CONTAINER:          hs.PostStartContainer != nil,
		nrinet.Event_UPDATE_CONTAINER:              hs.UpdateContainer != nil,
		nrinet.Event_POST_UPDATE_CONTAINER:         hs.PostUpdateContainer != nil,
		nrinet.Event_STOP_CONTAINER:                hs.StopContainer != nil,
		nrinet.Event_REMOVE_CONTAINER:              hs.RemoveContainer != nil,
		nrinet.Event_VALIDATE_CONTAINER_ADJUSTMENT: hs.ValidateContainerAdjustment != nil,
	} {
		if set {
			events = append(events, ev)
		}
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("builtin plugin %s-%s has no event handlers", h.b.Index, h.b.Base)
	}
	return nrinet.MaskFor(events...), nil
}

func (h *builtinHandler) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	if h.b.Handlers.Synchronize == nil {
		return nil, nil
	}
	rsp, err := h.b.Handlers.Synchronize(ctx, &api.SynchronizeRequest{Pods: pods, Containers: ctrs})
	return rsp.GetUpdate(), err
}

func (h *builtinHandler) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return h.b.Handlers.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
}

func (h *builtinHandler) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return h.b.Handlers.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod})
}

func (h *builtinHandler) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return h.b.Handlers.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod})
}

func (h *builtinHandler) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error {
	_, err := h.b.Handlers.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: overhead, LinuxResources: resources})
	return err
}

func (h *builtinHandler) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return h.b.Handlers.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
}

func (h *builtinHandler) CreateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	rsp, err := h.b.Handlers.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	return rsp.GetAdjust(), rsp.GetUpdate(), rsp.GetEvict(), err
}

func (h *builtinHandler) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return h.b.Handlers.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
}

func (h *builtinHandler) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return h.b.Handlers.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr})
}

func (h *builtinHandler) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return h.b.Handlers.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
}

func (h *builtinHandler) UpdateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	rsp, err := h.b.Handlers.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: resources})
	return rsp.GetUpdate(), rsp.GetEvict(), err
}

func (h *builtinHandler) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return h.b.Handlers.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
}

func (h *builtinHandler) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	rsp, err := h.b.Handlers.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
	return rsp.GetUpdate(), err
}

func (h *builtinHandler) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return h.b.Handlers.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
}

func (h *builtinHandler) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	return h.b.Handlers.ValidateContainerAdjustment(ctx, req)
}
