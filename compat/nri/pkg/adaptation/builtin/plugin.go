package builtin

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// BuiltinPlugin is a plugin that runs inside the runtime process.
//
//nolint:revive // upstream's name
type BuiltinPlugin struct {
	// Base is the plugin's name, Index its two-digit index: the plugin
	// is known as Index + "-" + Base.
	Base  string
	Index string
	// Handlers are the plugin's event handlers; it subscribes to the
	// events whose handler is set.
	Handlers BuiltinHandlers
}

// BuiltinHandlers are the event handlers of a BuiltinPlugin. A nil
// handler means the plugin does not handle that event.
//
//nolint:revive // upstream's name
type BuiltinHandlers struct {
	Configure            func(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error)
	Synchronize          func(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error)
	RunPodSandbox        func(context.Context, *api.RunPodSandboxRequest) error
	StopPodSandbox       func(context.Context, *api.StopPodSandboxRequest) error
	RemovePodSandbox     func(context.Context, *api.RemovePodSandboxRequest) error
	UpdatePodSandbox     func(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error)
	PostUpdatePodSandbox func(context.Context, *api.PostUpdatePodSandboxRequest) error

	CreateContainer             func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error)
	PostCreateContainer         func(context.Context, *api.PostCreateContainerRequest) error
	StartContainer              func(context.Context, *api.StartContainerRequest) error
	PostStartContainer          func(context.Context, *api.PostStartContainerRequest) error
	UpdateContainer             func(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error)
	PostUpdateContainer         func(context.Context, *api.PostUpdateContainerRequest) error
	StopContainer               func(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error)
	RemoveContainer             func(context.Context, *api.RemoveContainerRequest) error
	ValidateContainerAdjustment func(context.Context, *api.ValidateContainerAdjustmentRequest) error
}
