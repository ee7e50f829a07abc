package api_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// checkWire fails unless got equals want, also after a trip over the wire
// through the vtproto encoder and the reflection-based decoder.
func checkWire(t *testing.T, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", prototext.Format(got), prototext.Format(want))
	}
	b, err := got.(interface{ MarshalVT() ([]byte, error) }).MarshalVT()
	if err != nil {
		t.Fatalf("MarshalVT: %v", err)
	}
	back := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, back); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !proto.Equal(back, want) {
		t.Fatalf("after the wire got\n%v\nwant\n%v", prototext.Format(back), prototext.Format(want))
	}
}

func linuxAdj(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

func resAdj(r *api.LinuxResources) *api.ContainerAdjustment {
	return linuxAdj(&api.LinuxContainerAdjustment{Resources: r})
}

func TestContainerAdjustmentHelpers(t *testing.T) {
	mount := &api.Mount{Destination: "/data", Source: "/srv/data", Type: "bind", Options: []string{"rbind", "ro"}}
	hook := &api.Hook{Path: "/bin/hook", Args: []string{"hook", "x"}}
	dev := &api.LinuxDevice{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}
	cdi := &api.CDIDevice{Name: "vendor.com/gpu=0"}
	ns := &api.LinuxNamespace{Type: "network", Path: "/var/run/netns/x"}
	netDev := &api.LinuxNetDevice{Name: "eth1"}
	ioprio := &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4}
	seccomp := &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"}
	sched := &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: 5}
	rule := &api.LinuxDeviceCgroup{Allow: true, Type: "c", Major: api.Int64(10), Minor: api.Int64(229), Access: "rwm"}
	oom := -500

	tests := []struct {
		name  string
		build func(a *api.ContainerAdjustment)
		want  *api.ContainerAdjustment
	}{
		{"AddAnnotation", func(a *api.ContainerAdjustment) { a.AddAnnotation("k", "v") },
			&api.ContainerAdjustment{Annotations: map[string]string{"k": "v"}}},
		{"RemoveAnnotation", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("k") },
			&api.ContainerAdjustment{Annotations: map[string]string{"-k": ""}}},
		{"RemoveAnnotation then AddAnnotation", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("k"); a.AddAnnotation("k", "v") },
			&api.ContainerAdjustment{Annotations: map[string]string{"-k": "", "k": "v"}}},
		{"AddMount", func(a *api.ContainerAdjustment) { a.AddMount(mount); a.AddMount(nil) },
			&api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "/data", Source: "/srv/data", Type: "bind", Options: []string{"rbind", "ro"}}}}},
		{"RemoveMount", func(a *api.ContainerAdjustment) { a.RemoveMount("/data") },
			&api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/data"}}}},
		{"AddEnv", func(a *api.ContainerAdjustment) { a.AddEnv("A", "1"); a.AddEnv("B", "") },
			&api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "1"}, {Key: "B"}}}},
		{"RemoveEnv", func(a *api.ContainerAdjustment) { a.RemoveEnv("A") },
			&api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "-A"}}}},
		{"SetArgs", func(a *api.ContainerAdjustment) { a.SetArgs([]string{"sh", "-c", "true"}) },
			&api.ContainerAdjustment{Args: []string{"sh", "-c", "true"}}},
		{"UpdateArgs", func(a *api.ContainerAdjustment) { a.UpdateArgs([]string{"sh", "-c", "true"}) },
			&api.ContainerAdjustment{Args: []string{"", "sh", "-c", "true"}}},
		{"AddHooks", func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{hook}, Poststop: []*api.Hook{hook}})
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/two"}}, CreateRuntime: []*api.Hook{hook},
				CreateContainer: []*api.Hook{hook}, StartContainer: []*api.Hook{hook}, Poststart: []*api.Hook{hook}})
			a.AddHooks(nil)
		}, &api.ContainerAdjustment{Hooks: &api.Hooks{
			Prestart:        []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}, {Path: "/bin/two"}},
			CreateRuntime:   []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}},
			CreateContainer: []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}},
			StartContainer:  []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}},
			Poststart:       []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}},
			Poststop:        []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}},
		}}},
		{"AddRlimit", func(a *api.ContainerAdjustment) { a.AddRlimit("RLIMIT_NOFILE", 4096, 1024) },
			&api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 1024}}}},
		{"AddCDIDevice", func(a *api.ContainerAdjustment) { a.AddCDIDevice(cdi); a.AddCDIDevice(nil) },
			&api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=0"}}}},
		{"AddDevice", func(a *api.ContainerAdjustment) { a.AddDevice(dev); a.AddDevice(nil) },
			linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}})},
		{"RemoveDevice", func(a *api.ContainerAdjustment) { a.RemoveDevice("/dev/fuse") },
			linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/fuse"}}})},
		{"AddOrReplaceNamespace", func(a *api.ContainerAdjustment) { a.AddOrReplaceNamespace(ns); a.AddOrReplaceNamespace(nil) },
			linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}}})},
		{"RemoveNamespace", func(a *api.ContainerAdjustment) { a.RemoveNamespace(ns); a.RemoveNamespace(nil) },
			linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-network"}}})},
		{"AddLinuxNetDevice", func(a *api.ContainerAdjustment) {
			a.AddLinuxNetDevice("ens3", netDev)
			a.AddLinuxNetDevice("ens4", nil)
		}, linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"ens3": {Name: "eth1"}}})},
		{"RemoveLinuxNetDevice", func(a *api.ContainerAdjustment) { a.RemoveLinuxNetDevice("ens3") },
			linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-ens3": nil}})},
		{"SetLinuxSysctl", func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("net.core.somaxconn", "1024") },
			linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "1024"}})},
		{"RemoveLinuxSysctl", func(a *api.ContainerAdjustment) { a.RemoveLinuxSysctl("net.core.somaxconn") },
			linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.core.somaxconn": ""}})},
		{"SetLinuxCgroupsPath", func(a *api.ContainerAdjustment) { a.SetLinuxCgroupsPath("/kubepods/x") },
			linuxAdj(&api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/x"})},
		{"SetLinuxOomScoreAdj", func(a *api.ContainerAdjustment) { a.SetLinuxOomScoreAdj(&oom) },
			linuxAdj(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: -500}})},
		{"SetLinuxOomScoreAdj nil clears", func(a *api.ContainerAdjustment) { a.SetLinuxOomScoreAdj(&oom); a.SetLinuxOomScoreAdj(nil) },
			linuxAdj(&api.LinuxContainerAdjustment{})},
		{"SetLinuxIOPriority", func(a *api.ContainerAdjustment) { a.SetLinuxIOPriority(ioprio) },
			linuxAdj(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4}})},
		{"SetLinuxSeccompPolicy", func(a *api.ContainerAdjustment) { a.SetLinuxSeccompPolicy(seccomp) },
			linuxAdj(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"}})},
		{"SetLinuxScheduler", func(a *api.ContainerAdjustment) { a.SetLinuxScheduler(sched) },
			linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: 5}})},
		{"SetLinuxMemoryPolicy", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_BIND, "0-1", api.MpolFlag_MPOL_F_STATIC_NODES)
		}, linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{
			Mode: api.MpolMode_MPOL_BIND, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES}}})},
		{"SetLinuxMemoryPolicy default mode is present", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_DEFAULT, "") },
			linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{}})},
		{"SetLinuxRDTClosID", func(a *api.ContainerAdjustment) { a.SetLinuxRDTClosID("gold") },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{Value: "gold"}}})},
		{"SetLinuxRDTSchemata", func(a *api.ContainerAdjustment) { a.SetLinuxRDTSchemata([]string{"L3:0=f"}) },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{Value: []string{"L3:0=f"}}}})},
		{"SetLinuxRDTEnableMonitoring", func(a *api.ContainerAdjustment) { a.SetLinuxRDTEnableMonitoring(false) },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{EnableMonitoring: &api.OptionalBool{}}})},
		{"RemoveLinuxRDT", func(a *api.ContainerAdjustment) { a.RemoveLinuxRDT() },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}})},
		{"RemoveLinuxRDT then SetLinuxRDTClosID", func(a *api.ContainerAdjustment) { a.RemoveLinuxRDT(); a.SetLinuxRDTClosID("gold") },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true, ClosId: &api.OptionalString{Value: "gold"}}})},

		// Resources (resources_generated.go).
		{"SetLinuxMemoryLimit", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryLimit(1 << 30) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}})},
		{"SetLinuxMemoryLimit zero is present", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryLimit(0) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{}}})},
		{"SetLinuxMemoryReservation", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryReservation(1 << 20) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Reservation: &api.OptionalInt64{Value: 1 << 20}}})},
		{"SetLinuxMemorySwap", func(a *api.ContainerAdjustment) { a.SetLinuxMemorySwap(-1) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Swap: &api.OptionalInt64{Value: -1}}})},
		{"SetLinuxMemoryKernel", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryKernel(2) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Kernel: &api.OptionalInt64{Value: 2}}})},
		{"SetLinuxMemoryKernelTCP", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryKernelTCP(3) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{KernelTcp: &api.OptionalInt64{Value: 3}}})},
		{"SetLinuxMemorySwappiness", func(a *api.ContainerAdjustment) { a.SetLinuxMemorySwappiness(60) },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Swappiness: &api.OptionalUInt64{Value: 60}}})},
		{"SetLinuxMemoryDisableOomKiller", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryDisableOomKiller() },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{DisableOomKiller: &api.OptionalBool{Value: true}}})},
		{"SetLinuxMemoryUseHierarchy", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryUseHierarchy() },
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{UseHierarchy: &api.OptionalBool{Value: true}}})},
		{"SetLinuxCPUShares", func(a *api.ContainerAdjustment) { a.SetLinuxCPUShares(512) },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}}})},
		{"SetLinuxCPUQuota", func(a *api.ContainerAdjustment) { a.SetLinuxCPUQuota(-1) },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Quota: &api.OptionalInt64{Value: -1}}})},
		{"SetLinuxCPUPeriod", func(a *api.ContainerAdjustment) { a.SetLinuxCPUPeriod(100000) },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Period: &api.OptionalUInt64{Value: 100000}}})},
		{"SetLinuxCPURealtimeRuntime", func(a *api.ContainerAdjustment) { a.SetLinuxCPURealtimeRuntime(950000) },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{RealtimeRuntime: &api.OptionalInt64{Value: 950000}}})},
		{"SetLinuxCPURealtimePeriod", func(a *api.ContainerAdjustment) { a.SetLinuxCPURealtimePeriod(1000000) },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{RealtimePeriod: &api.OptionalUInt64{Value: 1000000}}})},
		{"SetLinuxCPUSetCPUs", func(a *api.ContainerAdjustment) { a.SetLinuxCPUSetCPUs("0-3") },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-3"}})},
		{"SetLinuxCPUSetMems", func(a *api.ContainerAdjustment) { a.SetLinuxCPUSetMems("0") },
			resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Mems: "0"}})},
		{"SetLinuxPidLimits", func(a *api.ContainerAdjustment) { a.SetLinuxPidLimits(100) },
			resAdj(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 100}})},
		{"AddLinuxHugepageLimit", func(a *api.ContainerAdjustment) {
			a.AddLinuxHugepageLimit("2MB", 1<<21)
			a.AddLinuxHugepageLimit("1GB", 0)
		}, resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 21}, {PageSize: "1GB"}}})},
		{"AddLinuxDeviceCgroup", func(a *api.ContainerAdjustment) { a.AddLinuxDeviceCgroup(rule); a.AddLinuxDeviceCgroup(nil) },
			resAdj(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c",
				Major: &api.OptionalInt64{Value: 10}, Minor: &api.OptionalInt64{Value: 229}, Access: "rwm"}}})},
		{"AddLinuxUnified", func(a *api.ContainerAdjustment) { a.AddLinuxUnified("memory.high", "max") },
			resAdj(&api.LinuxResources{Unified: map[string]string{"memory.high": "max"}})},
		{"SetLinuxBlockIOClass", func(a *api.ContainerAdjustment) { a.SetLinuxBlockIOClass("slow") },
			resAdj(&api.LinuxResources{BlockioClass: &api.OptionalString{Value: "slow"}})},
		{"SetLinuxRDTClass", func(a *api.ContainerAdjustment) { a.SetLinuxRDTClass("") },
			resAdj(&api.LinuxResources{RdtClass: &api.OptionalString{}})},

		{"helpers share sub-messages", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryLimit(1)
			a.SetLinuxMemorySwap(2)
			a.SetLinuxCPUShares(3)
			a.SetLinuxCgroupsPath("/p")
			a.RemoveLinuxSysctl("a")
			a.SetLinuxSysctl("b", "1")
		}, linuxAdj(&api.LinuxContainerAdjustment{
			CgroupsPath: "/p",
			Sysctl:      map[string]string{"-a": "", "b": "1"},
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}, Swap: &api.OptionalInt64{Value: 2}},
				Cpu:    &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 3}},
			},
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &api.ContainerAdjustment{}
			tc.build(a)
			checkWire(t, a, tc.want)
		})
	}
}

// Slices given to helpers are copied; messages are stored as given.
func TestContainerAdjustmentCopies(t *testing.T) {
	args := []string{"a", "b"}
	schemata := []string{"L3:0=f"}
	a := &api.ContainerAdjustment{}
	a.SetArgs(args)
	a.SetLinuxRDTSchemata(schemata)
	args[0], schemata[0] = "x", "x"
	if got := a.GetArgs()[0]; got != "a" {
		t.Errorf("SetArgs kept the caller's slice: args[0] = %q", got)
	}
	if got := a.GetLinux().GetRdt().GetSchemata().GetValue()[0]; got != "L3:0=f" {
		t.Errorf("SetLinuxRDTSchemata kept the caller's slice: schemata[0] = %q", got)
	}

	up := []string{"c"}
	a.UpdateArgs(up)
	up[0] = "x"
	if got := a.GetArgs(); len(got) != 2 || got[1] != "c" {
		t.Errorf("UpdateArgs: args = %q", got)
	}
}

// A plugin builds an adjustment for a container being created.
func ExampleContainerAdjustment() {
	adjust := &api.ContainerAdjustment{}
	adjust.RemoveAnnotation("example.com/owner") // take over a key set by an earlier plugin
	adjust.AddAnnotation("example.com/owner", "my-plugin")
	adjust.AddEnv("GOMAXPROCS", "2")
	adjust.RemoveMount("/tmp")
	adjust.SetLinuxCPUSetCPUs("2-3")
	adjust.SetLinuxMemoryLimit(512 << 20)
	adjust.RemoveLinuxSysctl("net.ipv4.ip_forward")

	fmt.Println(adjust.GetAnnotations())
	for _, e := range adjust.GetEnv() {
		fmt.Printf("env %s=%s\n", e.GetKey(), e.GetValue())
	}
	fmt.Println("mount", adjust.GetMounts()[0].GetDestination())
	r := adjust.GetLinux().GetResources()
	fmt.Println("cpus", r.GetCpu().GetCpus(), "memory", r.GetMemory().GetLimit().GetValue())
	fmt.Println(adjust.GetLinux().GetSysctl())
	// Output:
	// map[-example.com/owner: example.com/owner:my-plugin]
	// env GOMAXPROCS=2
	// mount -/tmp
	// cpus 2-3 memory 536870912
	// map[-net.ipv4.ip_forward:]
}
