package api_test

import (
	"testing"

	"github.com/nrinet/nrinet/api"
)

func resUpd(r *api.LinuxResources) *api.ContainerUpdate {
	return &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: r}}
}

func TestContainerUpdateHelpers(t *testing.T) {
	rule := &api.LinuxDeviceCgroup{Type: "a", Access: "rwm"}
	tests := []struct {
		name  string
		build func(u *api.ContainerUpdate)
		want  *api.ContainerUpdate
	}{
		{"SetContainerId", func(u *api.ContainerUpdate) { u.SetContainerId("ctr1") },
			&api.ContainerUpdate{ContainerId: "ctr1"}},
		{"SetIgnoreFailure", func(u *api.ContainerUpdate) { u.SetIgnoreFailure() },
			&api.ContainerUpdate{IgnoreFailure: true}},
		{"SetLinuxMemoryLimit", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(1 << 30) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}})},
		{"SetLinuxMemoryLimit zero is present", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(0) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{}}})},
		{"SetLinuxMemoryReservation", func(u *api.ContainerUpdate) { u.SetLinuxMemoryReservation(1 << 20) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Reservation: &api.OptionalInt64{Value: 1 << 20}}})},
		{"SetLinuxMemorySwap", func(u *api.ContainerUpdate) { u.SetLinuxMemorySwap(-1) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Swap: &api.OptionalInt64{Value: -1}}})},
		{"SetLinuxMemoryKernel", func(u *api.ContainerUpdate) { u.SetLinuxMemoryKernel(2) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Kernel: &api.OptionalInt64{Value: 2}}})},
		{"SetLinuxMemoryKernelTCP", func(u *api.ContainerUpdate) { u.SetLinuxMemoryKernelTCP(3) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{KernelTcp: &api.OptionalInt64{Value: 3}}})},
		{"SetLinuxMemorySwappiness", func(u *api.ContainerUpdate) { u.SetLinuxMemorySwappiness(0) },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{Swappiness: &api.OptionalUInt64{}}})},
		{"SetLinuxMemoryDisableOomKiller", func(u *api.ContainerUpdate) { u.SetLinuxMemoryDisableOomKiller() },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{DisableOomKiller: &api.OptionalBool{Value: true}}})},
		{"SetLinuxMemoryUseHierarchy", func(u *api.ContainerUpdate) { u.SetLinuxMemoryUseHierarchy() },
			resUpd(&api.LinuxResources{Memory: &api.LinuxMemory{UseHierarchy: &api.OptionalBool{Value: true}}})},
		{"SetLinuxCPUShares", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(512) },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}}})},
		{"SetLinuxCPUQuota", func(u *api.ContainerUpdate) { u.SetLinuxCPUQuota(50000) },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{Quota: &api.OptionalInt64{Value: 50000}}})},
		{"SetLinuxCPUPeriod", func(u *api.ContainerUpdate) { u.SetLinuxCPUPeriod(100000) },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{Period: &api.OptionalUInt64{Value: 100000}}})},
		{"SetLinuxCPURealtimeRuntime", func(u *api.ContainerUpdate) { u.SetLinuxCPURealtimeRuntime(950000) },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{RealtimeRuntime: &api.OptionalInt64{Value: 950000}}})},
		{"SetLinuxCPURealtimePeriod", func(u *api.ContainerUpdate) { u.SetLinuxCPURealtimePeriod(1000000) },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{RealtimePeriod: &api.OptionalUInt64{Value: 1000000}}})},
		{"SetLinuxCPUSetCPUs", func(u *api.ContainerUpdate) { u.SetLinuxCPUSetCPUs("0-3") },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-3"}})},
		{"SetLinuxCPUSetMems", func(u *api.ContainerUpdate) { u.SetLinuxCPUSetMems("0") },
			resUpd(&api.LinuxResources{Cpu: &api.LinuxCPU{Mems: "0"}})},
		{"SetLinuxPidLimits", func(u *api.ContainerUpdate) { u.SetLinuxPidLimits(100) },
			resUpd(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 100}})},
		{"AddLinuxHugepageLimit", func(u *api.ContainerUpdate) { u.AddLinuxHugepageLimit("2MB", 1<<21) },
			resUpd(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 21}}})},
		{"AddLinuxDeviceCgroup", func(u *api.ContainerUpdate) { u.AddLinuxDeviceCgroup(rule); u.AddLinuxDeviceCgroup(nil) },
			resUpd(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Type: "a", Access: "rwm"}}})},
		{"AddLinuxUnified", func(u *api.ContainerUpdate) {
			u.AddLinuxUnified("memory.high", "max")
			u.AddLinuxUnified("pids.max", "10")
		}, resUpd(&api.LinuxResources{Unified: map[string]string{"memory.high": "max", "pids.max": "10"}})},
		{"SetLinuxBlockIOClass", func(u *api.ContainerUpdate) { u.SetLinuxBlockIOClass("slow") },
			resUpd(&api.LinuxResources{BlockioClass: &api.OptionalString{Value: "slow"}})},
		{"SetLinuxRDTClass", func(u *api.ContainerUpdate) { u.SetLinuxRDTClass("gold") },
			resUpd(&api.LinuxResources{RdtClass: &api.OptionalString{Value: "gold"}})},
		{"helpers share sub-messages", func(u *api.ContainerUpdate) {
			u.SetContainerId("ctr1")
			u.SetLinuxMemoryLimit(1)
			u.SetLinuxMemorySwap(2)
			u.SetLinuxCPUQuota(3)
			u.SetLinuxCPUPeriod(4)
			u.SetIgnoreFailure()
		}, &api.ContainerUpdate{ContainerId: "ctr1", IgnoreFailure: true, Linux: &api.LinuxContainerUpdate{
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}, Swap: &api.OptionalInt64{Value: 2}},
				Cpu:    &api.LinuxCPU{Quota: &api.OptionalInt64{Value: 3}, Period: &api.OptionalUInt64{Value: 4}},
			},
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := &api.ContainerUpdate{}
			tc.build(u)
			checkWire(t, u, tc.want)
		})
	}
}
