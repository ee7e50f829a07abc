//go:build upstream

package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

type (
	PodSandbox          = api.PodSandbox
	Container           = api.Container
	ContainerAdjustment = api.ContainerAdjustment
	ContainerUpdate     = api.ContainerUpdate
	KeyValue            = api.KeyValue
	LinuxResources      = api.LinuxResources
	EventMask           = api.EventMask
)

var theStub stub.Stub

func timeouts() (reg, req int64) {
	return theStub.RegistrationTimeout().Milliseconds(), theStub.RequestTimeout().Milliseconds()
}

// run serves the runtime until the connection ends.
func run(rec *recorder, name, idx, socket string) error {
	var opts []stub.Option
	if name != "" {
		opts = append(opts, stub.WithPluginName(name))
	}
	if idx != "" {
		opts = append(opts, stub.WithPluginIdx(idx))
	}
	if socket != "" {
		opts = append(opts, stub.WithSocketPath(socket))
	}
	var err error
	if theStub, err = stub.New(rec, opts...); err != nil {
		return err
	}
	err = theStub.Run(context.Background())
	rec.write(record{Event: "Closed"})
	return err
}
