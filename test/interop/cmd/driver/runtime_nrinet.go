//go:build !upstream

package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

type (
	PodSandbox                  = api.PodSandbox
	Container                   = api.Container
	LinuxResources              = api.LinuxResources
	RunPodSandboxRequest        = api.RunPodSandboxRequest
	UpdatePodSandboxRequest     = api.UpdatePodSandboxRequest
	PostUpdatePodSandboxRequest = api.PostUpdatePodSandboxRequest
	StopPodSandboxRequest       = api.StopPodSandboxRequest
	RemovePodSandboxRequest     = api.RemovePodSandboxRequest
	CreateContainerRequest      = api.CreateContainerRequest
	PostCreateContainerRequest  = api.PostCreateContainerRequest
	StartContainerRequest       = api.StartContainerRequest
	PostStartContainerRequest   = api.PostStartContainerRequest
	UpdateContainerRequest      = api.UpdateContainerRequest
	PostUpdateContainerRequest  = api.PostUpdateContainerRequest
	StopContainerRequest        = api.StopContainerRequest
	RemoveContainerRequest      = api.RemoveContainerRequest
	ContainerUpdate             = api.ContainerUpdate
)

// driver adapts the nrinet runtime to the calls runEvents makes.
type driver struct {
	*runtime.Runtime
}

func newDriver(socket, pluginDir, confDir string, pods []*PodSandbox, ctrs []*Container) (*driver, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := runtime.New("nrinet-driver", "v0.0.1",
		runtime.WithSocketPath(socket),
		runtime.WithPluginPath(pluginDir),
		runtime.WithPluginConfigPath(confDir),
		runtime.WithLogger(log),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
			return pods, ctrs, nil
		}),
		runtime.WithUpdateFunc(func(_ context.Context, plugin string, ups []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
			for _, u := range ups {
				emit(line{Step: "update", Plugin: plugin, Response: pj(u)})
			}
			return nil, nil
		}),
		runtime.WithEvictFunc(func(_ context.Context, plugin string, evictions []*api.ContainerEviction) error {
			for _, e := range evictions {
				emit(line{Step: "evict", Plugin: plugin, Response: pj(e)})
			}
			return nil
		}),
	)
	if err != nil {
		return nil, err
	}
	if err := rt.Start(context.Background()); err != nil {
		return nil, err
	}
	return &driver{rt}, nil
}

// awaitSync is a no-op: a request waits for any plugin still synchronizing.
func (d *driver) awaitSync() {}

func (d *driver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Stop(ctx)
}

func (d *driver) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) error {
	_, err := d.Runtime.RunPodSandbox(ctx, req)
	return err
}

// extensionEvents exercises the pod network extension: a verbose
// PodSandboxStatus of the golden pod.
func (d *driver) extensionEvents(ctx context.Context, pod *PodSandbox, result func(string, proto.Message, error)) {
	rec, err := d.PodSandboxStatus(ctx, pod, nil, true)
	result("PodSandboxStatus", rec, err)
}
