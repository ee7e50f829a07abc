package ocispec_test

import (
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

func BenchmarkApplyAdjustment(b *testing.B) {
	adj := &api.ContainerAdjustment{
		Annotations: map[string]string{"-a": "", "a": "x", "c": "3", "d": "4"},
		Mounts: []*api.Mount{
			{Destination: "/var/lib/x", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "-/dev/shm"},
		},
		Env:     []*api.KeyValue{{Key: "A", Value: "10"}, {Key: "-B"}, {Key: "NEW", Value: "1"}},
		Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 4096}},
		Linux: &api.LinuxContainerAdjustment{
			Devices: []*api.LinuxDevice{{Path: "/dev/sda", Type: "b", Major: 8}},
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: oInt64(1 << 30)},
				Cpu:    &api.LinuxCPU{Cpus: "0-1", Quota: oInt64(50000)},
				Pids:   &api.LinuxPids{Limit: 1000},
			},
			Sysctl:     map[string]string{"net.core.somaxconn": "1024"},
			Namespaces: []*api.LinuxNamespace{{Type: "ipc"}},
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		spec := baseSpec()
		if err := ocispec.ApplyAdjustment(spec, adj); err != nil {
			b.Fatal(err)
		}
	}
}
