package api

import (
	"context"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nrinet "github.com/nrinet/nrinet/api"
)

// RuntimeService is the Runtime ttrpc service, served by the runtime and
// called by plugins, with upstream's methods. nrinet's
// nrinet.RuntimeService adds UpdatePodSandboxNetwork (the pod network
// extension); every implementation of it implements this one too.
type RuntimeService interface {
	RegisterPlugin(context.Context, *RegisterPluginRequest) (*Empty, error)
	UpdateContainers(context.Context, *UpdateContainersRequest) (*UpdateContainersResponse, error)
}

// PluginService is the Plugin ttrpc service, served by plugins and called
// by the runtime, with upstream's methods. nrinet's nrinet.PluginService
// adds PodSandboxStatus (the pod network extension); every implementation
// of it implements this one too.
type PluginService interface {
	Configure(context.Context, *ConfigureRequest) (*ConfigureResponse, error)
	Synchronize(context.Context, *SynchronizeRequest) (*SynchronizeResponse, error)
	Shutdown(context.Context, *Empty) (*Empty, error)
	RunPodSandbox(context.Context, *RunPodSandboxRequest) (*RunPodSandboxResponse, error)
	UpdatePodSandbox(context.Context, *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error)
	PostUpdatePodSandbox(context.Context, *PostUpdatePodSandboxRequest) (*PostUpdatePodSandboxResponse, error)
	StopPodSandbox(context.Context, *StopPodSandboxRequest) (*StopPodSandboxResponse, error)
	RemovePodSandbox(context.Context, *RemovePodSandboxRequest) (*RemovePodSandboxResponse, error)
	CreateContainer(context.Context, *CreateContainerRequest) (*CreateContainerResponse, error)
	PostCreateContainer(context.Context, *PostCreateContainerRequest) (*PostCreateContainerResponse, error)
	StartContainer(context.Context, *StartContainerRequest) (*StartContainerResponse, error)
	PostStartContainer(context.Context, *PostStartContainerRequest) (*PostStartContainerResponse, error)
	UpdateContainer(context.Context, *UpdateContainerRequest) (*UpdateContainerResponse, error)
	PostUpdateContainer(context.Context, *PostUpdateContainerRequest) (*PostUpdateContainerResponse, error)
	StopContainer(context.Context, *StopContainerRequest) (*StopContainerResponse, error)
	RemoveContainer(context.Context, *RemoveContainerRequest) (*RemoveContainerResponse, error)
	StateChange(context.Context, *StateChangeEvent) (*Empty, error)
	ValidateContainerAdjustment(context.Context, *ValidateContainerAdjustmentRequest) (*ValidateContainerAdjustmentResponse, error)
}

// The nrinet services are supersets of these.
var (
	_ RuntimeService = nrinet.RuntimeService(nil)
	_ PluginService  = nrinet.PluginService(nil)
)

// RegisterRuntimeService registers svc as the Runtime service of srv. If
// svc also implements nrinet.RuntimeService, its UpdatePodSandboxNetwork
// is served too; otherwise that method answers with codes.Unimplemented.
func RegisterRuntimeService(srv *ttrpc.Server, svc RuntimeService) {
	full, ok := svc.(nrinet.RuntimeService)
	if !ok {
		full = runtimeService{svc}
	}
	nrinet.RegisterRuntimeService(srv, full)
}

// RegisterPluginService registers svc as the Plugin service of srv. If
// svc also implements nrinet.PluginService, its PodSandboxStatus is served
// too; otherwise that method answers with codes.Unimplemented.
func RegisterPluginService(srv *ttrpc.Server, svc PluginService) {
	full, ok := svc.(nrinet.PluginService)
	if !ok {
		full = pluginService{svc}
	}
	nrinet.RegisterPluginService(srv, full)
}

// NewRuntimeClient returns a client of the Runtime service over client.
func NewRuntimeClient(client *ttrpc.Client) RuntimeService {
	return nrinet.NewRuntimeClient(client)
}

// NewPluginClient returns a client of the Plugin service over client.
func NewPluginClient(client *ttrpc.Client) PluginService {
	return nrinet.NewPluginClient(client)
}

// runtimeService completes an upstream-style Runtime service.
type runtimeService struct{ RuntimeService }

func (runtimeService) UpdatePodSandboxNetwork(context.Context, *nrinet.UpdatePodSandboxNetworkRequest) (*nrinet.UpdatePodSandboxNetworkResponse, error) {
	return nil, status.Error(codes.Unimplemented, "UpdatePodSandboxNetwork: this runtime does not implement the pod network extension")
}

// pluginService completes an upstream-style Plugin service.
type pluginService struct{ PluginService }

func (pluginService) PodSandboxStatus(context.Context, *nrinet.PodSandboxStatusRequest) (*nrinet.PodSandboxStatusResponse, error) {
	return nil, status.Error(codes.Unimplemented, "PodSandboxStatus: this plugin does not implement the pod network extension")
}
