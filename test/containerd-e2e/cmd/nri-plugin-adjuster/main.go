// Command nri-plugin-adjuster is an NRI plugin written on nrinet's plugin
// package. It does what nri-stub-adjuster does, with the same command line
// (package internal/adjust): for each container of the name it is given it
// adds an environment variable, an annotation and a read-only bind mount
// and sets the memory limit. It prints "synchronized" once the runtime has
// synchronized it and "adjusted <container ID>" for each container it
// adjusted, and exits when the connection ends or on SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"

	"github.com/nrinet/nrinet/test/containerd-e2e/internal/adjust"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nri-plugin-adjuster:", err)
		os.Exit(1)
	}
}

func run() error {
	spec, err := adjust.Parse("nri-plugin-adjuster", os.Args[1:])
	if err != nil {
		return err
	}
	s, err := plugin.New(adjuster{spec: spec},
		plugin.WithSocketPath(spec.Socket), plugin.WithPluginName(spec.Name), plugin.WithPluginIdx(spec.Idx))
	if err != nil {
		return fmt.Errorf("plugin %s-%s: %w", spec.Idx, spec.Name, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("plugin %s-%s: %w", spec.Idx, spec.Name, err)
	}
	return nil
}

// adjuster adjusts the containers its spec names.
type adjuster struct{ spec adjust.Spec }

func (a adjuster) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	fmt.Println(adjust.Synchronized)
	return nil, nil
}

func (a adjuster) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if ctr.GetName() != a.spec.Container {
		return nil, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(a.spec.EnvKey, a.spec.EnvValue)
	adj.AddAnnotation(a.spec.AnnotationKey, a.spec.AnnotationValue)
	adj.AddMount(&api.Mount{
		Source: a.spec.MountSource, Destination: a.spec.MountDestination,
		Type: "bind", Options: adjust.MountOptions(),
	})
	adj.SetLinuxMemoryLimit(a.spec.MemoryLimit)
	fmt.Println(adjust.Adjusted + ctr.GetId())
	return adj, nil, nil
}
