package ocispec_test

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

func ExampleApplyAdjustment() {
	spec := &rspec.Spec{
		Annotations: map[string]string{"team": "a"},
		Process:     &rspec.Process{Env: []string{"PATH=/bin", "DEBUG=1"}},
		Mounts:      []rspec.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
	}
	adj := &api.ContainerAdjustment{
		// Removed and set: always ends up set.
		Annotations: map[string]string{"-team": "", "team": "b"},
		Env:         []*api.KeyValue{{Key: "-DEBUG"}, {Key: "GOMAXPROCS", Value: "2"}},
		Mounts: []*api.Mount{
			{Destination: "/cache/data", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/cache", Type: "tmpfs", Source: "tmpfs"},
		},
		Linux: &api.LinuxContainerAdjustment{
			Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "2-3"}},
		},
	}
	if err := ocispec.ApplyAdjustment(spec, adj); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("team:", spec.Annotations["team"])
	fmt.Println("env:", spec.Process.Env)
	for _, m := range spec.Mounts {
		fmt.Println("mount:", m.Destination)
	}
	fmt.Println("cpus:", spec.Linux.Resources.CPU.Cpus)

	bad := &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{
		Namespaces: []*api.LinuxNamespace{{Type: "-netns"}},
	}}
	fmt.Println(ocispec.ApplyAdjustment(spec, bad))
	// Output:
	// team: b
	// env: [PATH=/bin GOMAXPROCS=2]
	// mount: /proc
	// mount: /cache
	// mount: /cache/data
	// cpus: 2-3
	// ocispec: linux.namespaces[0].type "-netns": unknown namespace type
}
