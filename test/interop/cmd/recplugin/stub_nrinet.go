//go:build !upstream

package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

type (
	PodSandbox              = api.PodSandbox
	Container               = api.Container
	ContainerAdjustment     = api.ContainerAdjustment
	ContainerUpdate         = api.ContainerUpdate
	ContainerEviction       = api.ContainerEviction
	KeyValue                = api.KeyValue
	LinuxResources          = api.LinuxResources
	EventMask               = api.EventMask
	CreateContainerResponse = api.CreateContainerResponse
	UpdateContainerResponse = api.UpdateContainerResponse
	UpdateContainersRequest = api.UpdateContainersRequest
)

var stub *plugin.Stub

// CreateContainerEvict answers CreateContainer, evictions included.
func (r *recorder) CreateContainerEvict(_ context.Context, p *PodSandbox, c *Container) (*ContainerAdjustment, []*ContainerUpdate, []*ContainerEviction, error) {
	return r.createContainer(p, c)
}

// UpdateContainerEvict answers UpdateContainer, evictions included.
func (r *recorder) UpdateContainerEvict(_ context.Context, p *PodSandbox, c *Container, res *LinuxResources) ([]*ContainerUpdate, []*ContainerEviction, error) {
	return r.updateContainer(p, c, res)
}

// updateContainers asks the runtime for unsolicited updates and evictions.
func updateContainers(updates []*ContainerUpdate, evictions []*ContainerEviction) ([]*ContainerUpdate, error) {
	return stub.UpdateContainers(context.Background(), updates, evictions)
}

func timeouts() (reg, req int64) {
	info, _ := stub.Runtime()
	return info.RegistrationTimeout.Milliseconds(), info.RequestTimeout.Milliseconds()
}

// run serves the runtime until the connection ends.
func run(rec *recorder, name, idx, socket string) error {
	opts := []plugin.Option{plugin.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))}
	if name != "" {
		opts = append(opts, plugin.WithPluginName(name))
	}
	if idx != "" {
		opts = append(opts, plugin.WithPluginIdx(idx))
	}
	if socket != "" {
		opts = append(opts, plugin.WithSocketPath(socket))
	}
	var err error
	if stub, err = plugin.New(rec, opts...); err != nil {
		return err
	}
	err = stub.Run(context.Background())
	rec.write(record{Event: "Closed"})
	return err
}
