//go:build upstream

package main

import (
	"context"

	"google.golang.org/protobuf/proto"

	nri "github.com/containerd/nri/pkg/adaptation"
)

type (
	PodSandbox                  = nri.PodSandbox
	Container                   = nri.Container
	LinuxResources              = nri.LinuxResources
	RunPodSandboxRequest        = nri.RunPodSandboxRequest
	UpdatePodSandboxRequest     = nri.UpdatePodSandboxRequest
	PostUpdatePodSandboxRequest = nri.PostUpdatePodSandboxRequest
	StopPodSandboxRequest       = nri.StopPodSandboxRequest
	RemovePodSandboxRequest     = nri.RemovePodSandboxRequest
	CreateContainerRequest      = nri.CreateContainerRequest
	PostCreateContainerRequest  = nri.PostCreateContainerRequest
	StartContainerRequest       = nri.StartContainerRequest
	PostStartContainerRequest   = nri.PostStartContainerRequest
	UpdateContainerRequest      = nri.UpdateContainerRequest
	PostUpdateContainerRequest  = nri.PostUpdateContainerRequest
	StopContainerRequest        = nri.StopContainerRequest
	RemoveContainerRequest      = nri.RemoveContainerRequest
	ContainerUpdate             = nri.ContainerUpdate
)

// driver is containerd/nri's runtime side.
type driver struct {
	*nri.Adaptation
}

func newDriver(socket, pluginDir, confDir string, pods []*PodSandbox, ctrs []*Container) (*driver, error) {
	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		_, err := cb(ctx, pods, ctrs)
		return err
	}
	updateFn := func(_ context.Context, ups []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) {
		for _, u := range ups {
			emit(line{Step: "update", Response: pj(u)})
		}
		return nil, nil
	}
	a, err := nri.New("upstream-driver", "v0.0.1", syncFn, updateFn,
		nri.WithSocketPath(socket), nri.WithPluginPath(pluginDir), nri.WithPluginConfigPath(confDir))
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	return &driver{a}, nil
}

// awaitSync waits for any plugin being synchronized to join.
func (d *driver) awaitSync() { d.BlockPluginSync().Unblock() }

func (d *driver) stop() { d.Stop() }

// extensionEvents does nothing: upstream NRI has no pod network extension.
func (d *driver) extensionEvents(context.Context, *PodSandbox, func(string, proto.Message, error)) {}
