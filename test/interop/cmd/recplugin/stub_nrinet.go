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
	PodSandbox          = api.PodSandbox
	Container           = api.Container
	ContainerAdjustment = api.ContainerAdjustment
	ContainerUpdate     = api.ContainerUpdate
	KeyValue            = api.KeyValue
	LinuxResources      = api.LinuxResources
	EventMask           = api.EventMask
)

var stub *plugin.Stub

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
