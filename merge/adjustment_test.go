package merge_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

type step struct {
	plugin string
	adj    *api.ContainerAdjustment
}

func linux(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

func resources(r *api.LinuxResources) *api.ContainerAdjustment {
	return linux(&api.LinuxContainerAdjustment{Resources: r})
}

func mnt(dst string) *api.Mount {
	return &api.Mount{Destination: dst, Source: "/src" + dst, Type: "bind"}
}
func env(k, v string) *api.KeyValue { return &api.KeyValue{Key: k, Value: v} }
func dev(p string) *api.LinuxDevice { return &api.LinuxDevice{Path: p, Type: "c", Major: 1, Minor: 3} }

// TestAdjustment covers each adjustment kind: a plugin setting it, two
// plugins conflicting on it, and its removal marker.
func TestAdjustment(t *testing.T) {
	base := &api.Container{
		Id:          "c1",
		Annotations: map[string]string{"orig": "1"},
		Env:         []string{"PATH=/bin", "HOME=/root"},
		Mounts:      []*api.Mount{mnt("/data")},
		Linux: &api.LinuxContainer{
			Devices:    []*api.LinuxDevice{dev("/dev/null")},
			Namespaces: []*api.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/proc/1/ns/net"}},
			Sysctl:     map[string]string{"net.ipv4.ip_forward": "0"},
		},
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		want    *api.ContainerAdjustment
		wantErr string
		view    func(*api.Container) bool
	}{
		{
			name:  "annotations from two plugins",
			steps: []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"a": "1"}}}, {"20-b", &api.ContainerAdjustment{Annotations: map[string]string{"b": "2", "-orig": ""}}}},
			want:  &api.ContainerAdjustment{Annotations: map[string]string{"a": "1", "b": "2", "-orig": ""}},
			view: func(c *api.Container) bool {
				return c.Annotations["a"] == "1" && c.Annotations["b"] == "2" && c.Annotations["orig"] == ""
			},
		},
		{
			name:    "annotation conflict",
			steps:   []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"k": "1"}}}, {"20-b", &api.ContainerAdjustment{Annotations: map[string]string{"k": "2"}}}},
			wantErr: `plugins "20-b" and "10-a" both tried to set Annotations "k" of container "c1"`,
		},
		{
			name:  "annotation removed and set by one plugin keeps both, as on the wire",
			steps: []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"-orig": "", "orig": "2"}}}},
			want:  &api.ContainerAdjustment{Annotations: map[string]string{"-orig": "", "orig": "2"}},
		},
		{
			name:  "annotation set by one plugin removed by a later one: the removal wins",
			steps: []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"k": "1"}}}, {"20-b", &api.ContainerAdjustment{Annotations: map[string]string{"-k": ""}}}},
			want:  &api.ContainerAdjustment{Annotations: map[string]string{"-k": ""}},
			view:  func(c *api.Container) bool { _, ok := c.Annotations["k"]; return !ok },
		},
		{
			name: "annotation removed by a plugin may not be set by a third",
			steps: []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"k": "1"}}}, {"20-b", &api.ContainerAdjustment{Annotations: map[string]string{"-k": ""}}},
				{"30-c", &api.ContainerAdjustment{Annotations: map[string]string{"k": "3"}}}},
			wantErr: `plugins "30-c" and "20-b" both tried to set Annotations "k"`,
		},
		{
			name:  "mounts: add, replace the container's, remove",
			steps: []step{{"10-a", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/data"}, mnt("/x")}}}},
			want:  &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x"), {Destination: "-/data"}}},
			view:  func(c *api.Container) bool { return len(c.Mounts) == 1 && c.Mounts[0].Destination == "/x" },
		},
		{
			name:  "several mount removals are forwarded in the plugin's order",
			steps: []step{{"10-a", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/z"}, {Destination: "-/data"}, {Destination: "-/a"}}}}},
			want:  &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/z"}, {Destination: "-/data"}, {Destination: "-/a"}}},
		},
		{
			name:    "mount conflict",
			steps:   []step{{"10-a", &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x")}}}, {"20-b", &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x")}}}},
			wantErr: `plugins "20-b" and "10-a" both tried to set Mounts "/x"`,
		},
		{
			name:  "mount removed by a later plugin is dropped and forwarded",
			steps: []step{{"10-a", &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x"), mnt("/y")}}}, {"20-b", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/x"}}}}},
			want:  &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/y"), {Destination: "-/x"}}},
		},
		{
			name:  "env: add, replace, remove (the removal is forwarded)",
			steps: []step{{"10-a", &api.ContainerAdjustment{Env: []*api.KeyValue{env("A", "1"), env("-HOME", ""), env("PATH", "/usr/bin")}}}},
			want:  &api.ContainerAdjustment{Env: []*api.KeyValue{env("A", "1"), env("PATH", "/usr/bin"), env("-HOME", "")}},
			view: func(c *api.Container) bool {
				return strings.Join(c.Env, " ") == "A=1 PATH=/usr/bin"
			},
		},
		{
			name: "env removal marker then set by another plugin is a conflict",
			steps: []step{{"10-a", &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "1")}}}, {"20-b", &api.ContainerAdjustment{Env: []*api.KeyValue{env("-X", "")}}},
				{"30-c", &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "3")}}}},
			wantErr: `plugins "30-c" and "20-b" both tried to set Env "X"`,
		},
		{
			name:  "env set twice by one plugin: the last wins",
			steps: []step{{"10-a", &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "1"), env("X", "2")}}}},
			want:  &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "2")}},
		},
		{
			name:  "args replaced with the force marker",
			steps: []step{{"10-a", &api.ContainerAdjustment{Args: []string{"a"}}}, {"20-b", &api.ContainerAdjustment{Args: []string{"", "b", "c"}}}},
			want:  &api.ContainerAdjustment{Args: []string{"b", "c"}},
			view:  func(c *api.Container) bool { return strings.Join(c.Args, " ") == "b c" },
		},
		{
			name:    "args conflict",
			steps:   []step{{"10-a", &api.ContainerAdjustment{Args: []string{"a"}}}, {"20-b", &api.ContainerAdjustment{Args: []string{"b"}}}},
			wantErr: `plugins "20-b" and "10-a" both tried to set Args of container "c1"`,
		},
		{
			name: "hooks are appended",
			steps: []step{{"10-a", &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/a"}}}}},
				{"20-b", &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/b"}}, Poststop: []*api.Hook{{Path: "/c"}}}}}},
			want: &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/a"}, {Path: "/b"}}, Poststop: []*api.Hook{{Path: "/c"}}}},
			view: func(c *api.Container) bool {
				return len(c.GetHooks().GetPrestart()) == 2 && len(c.GetHooks().GetPoststop()) == 1
			},
		},
		{
			name: "conflicts are found in key order",
			steps: []step{{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"x": "1", "y": "1"}}},
				{"20-b", &api.ContainerAdjustment{Annotations: map[string]string{"y": "2", "x": "2"}}}},
			wantErr: `Annotations "x"`,
		},
		{
			name: "rlimits per type",
			steps: []step{{"10-a", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 10, Soft: 10}}}},
				{"20-b", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: 5}}}}},
			want: &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 10, Soft: 10}, {Type: "RLIMIT_NPROC", Hard: 5}}},
		},
		{
			name: "rlimit conflict",
			steps: []step{{"10-a", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE"}}}},
				{"20-b", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE"}}}}},
			wantErr: `Rlimits "RLIMIT_NOFILE"`,
		},
		{
			name:    "CDI device conflict",
			steps:   []step{{"10-a", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=0"}}}}, {"20-b", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=0"}}}}},
			wantErr: `CdiDevices "vendor.com/gpu=0"`,
		},
		{
			name:  "devices: add and remove the container's",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/fuse"), {Path: "-/dev/null"}}})}},
			want:  linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/fuse"), {Path: "-/dev/null"}}}),
			view: func(c *api.Container) bool {
				return len(c.Linux.Devices) == 1 && c.Linux.Devices[0].Path == "/dev/fuse"
			},
		},
		{
			name:    "device conflict",
			steps:   []step{{"10-a", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/fuse")}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/fuse")}})}},
			wantErr: `Devices "/dev/fuse"`,
		},
		{
			name: "memory and cpu fields merge one by one",
			steps: []step{{"10-a", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}})},
				{"20-b", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Swap: &api.OptionalInt64{}}, Cpu: &api.LinuxCPU{Cpus: "0-1", Shares: &api.OptionalUInt64{Value: 512}}})}},
			want: resources(&api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}, Swap: &api.OptionalInt64{}},
				Cpu:    &api.LinuxCPU{Cpus: "0-1", Shares: &api.OptionalUInt64{Value: 512}},
			}),
			view: func(c *api.Container) bool {
				r := c.Linux.Resources
				return r.Memory.Limit.GetValue() == 1<<30 && r.Memory.Swap != nil && r.Cpu.Cpus == "0-1"
			},
		},
		{
			name:    "memory limit conflict",
			steps:   []step{{"10-a", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}}})}, {"20-b", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2}}})}},
			wantErr: `plugins "20-b" and "10-a" both tried to set MemLimit of container "c1"`,
		},
		{
			name:    "cpuset conflict",
			steps:   []step{{"10-a", resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0"}})}, {"20-b", resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}})}},
			wantErr: `CPUSetCPUs`,
		},
		{
			name: "hugepages, unified, device rules, classes, pids",
			steps: []step{{"10-a", resources(&api.LinuxResources{
				HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4}},
				Unified:        map[string]string{"memory.high": "max"},
				Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "rwm"}},
			})}, {"20-b", resources(&api.LinuxResources{
				HugepageLimits: []*api.HugepageLimit{{PageSize: "1GB", Limit: 1}},
				Devices:        []*api.LinuxDeviceCgroup{{Allow: false, Type: "b"}},
				BlockioClass:   &api.OptionalString{Value: "slow"},
				RdtClass:       &api.OptionalString{Value: "gold"},
				Pids:           &api.LinuxPids{Limit: 100},
			})}},
			want: resources(&api.LinuxResources{
				HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4}, {PageSize: "1GB", Limit: 1}},
				Unified:        map[string]string{"memory.high": "max"},
				Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "rwm"}, {Allow: false, Type: "b"}},
				BlockioClass:   &api.OptionalString{Value: "slow"},
				RdtClass:       &api.OptionalString{Value: "gold"},
				Pids:           &api.LinuxPids{Limit: 100},
			}),
		},
		{
			name:    "hugepage conflict",
			steps:   []step{{"10-a", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB"}}})}, {"20-b", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB"}}})}},
			wantErr: `HugepageLimits "2MB"`,
		},
		{
			name:    "unified conflict",
			steps:   []step{{"10-a", resources(&api.LinuxResources{Unified: map[string]string{"k": "1"}})}, {"20-b", resources(&api.LinuxResources{Unified: map[string]string{"k": "2"}})}},
			wantErr: `CgroupsUnified "k"`,
		},
		{
			name:    "pids conflict",
			steps:   []step{{"10-a", resources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 1}})}, {"20-b", resources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 2}})}},
			wantErr: `PidsLimit`,
		},
		{
			name: "simple Linux fields",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/x", OomScoreAdj: &api.OptionalInt{Value: -100}})},
				{"20-b", linux(&api.LinuxContainerAdjustment{
					IoPriority:    &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4},
					SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"},
					Scheduler:     &api.LinuxScheduler{Nice: 5},
					MemoryPolicy:  &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Nodes: "0"},
				})}},
			want: linux(&api.LinuxContainerAdjustment{
				CgroupsPath: "/kubepods/x", OomScoreAdj: &api.OptionalInt{Value: -100},
				IoPriority:    &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4},
				SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"},
				Scheduler:     &api.LinuxScheduler{Nice: 5},
				MemoryPolicy:  &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Nodes: "0"},
			}),
			view: func(c *api.Container) bool {
				return c.Linux.CgroupsPath == "/kubepods/x" && c.Linux.Scheduler.GetNice() == 5
			},
		},
		{name: "cgroups path conflict", wantErr: "CgroupsPath", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{CgroupsPath: "/a"})}, {"20-b", linux(&api.LinuxContainerAdjustment{CgroupsPath: "/b"})}}},
		{name: "OOM score conflict", wantErr: "OomScoreAdj", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{}})}, {"20-b", linux(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: 1}})}}},
		{name: "I/O priority conflict", wantErr: "IoPriority", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{}})}, {"20-b", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{}})}}},
		{name: "seccomp conflict", wantErr: "SeccompPolicy", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{}})}, {"20-b", linux(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{}})}}},
		{name: "scheduler conflict", wantErr: "LinuxSched", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{}})}}},
		{name: "memory policy conflict", wantErr: "MemoryPolicy", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{}})}, {"20-b", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{}})}}},
		{
			name:  "namespaces replaced in place and removed",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}, {Type: "-pid"}}})}},
			want:  linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}, {Type: "-pid"}}}),
			view: func(c *api.Container) bool {
				return len(c.Linux.Namespaces) == 1 && c.Linux.Namespaces[0].Path == "/var/run/netns/x"
			},
		},
		{name: "namespace conflict, net and network being one", wantErr: `plugins "20-b" and "10-a" both tried to set Namespace "network"`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network"}}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "net"}}})}}},
		{
			name:  "namespace set then removed in one answer: the last entry counts",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "ipc", Path: "/a"}, {Type: "-ipc"}}})}},
			want:  linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-ipc"}}}),
		},
		{name: "mount conflict on the same path written differently", wantErr: `Mounts "/x"`, steps: []step{{"10-a", &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x")}}}, {"20-b", &api.ContainerAdjustment{Mounts: []*api.Mount{mnt("/x/")}}}}},
		{name: "device conflict on the same path written differently", wantErr: `Devices "/dev/fuse"`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/fuse")}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev//fuse")}})}}},
		{name: "namespace conflict", wantErr: `Namespace "network"`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network"}}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-network"}}})}}},
		{
			name:  "sysctl set and removed",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "1024", "-net.ipv4.ip_forward": ""}})}},
			want:  linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "1024", "-net.ipv4.ip_forward": ""}}),
			view: func(c *api.Container) bool {
				_, fwd := c.Linux.Sysctl["net.ipv4.ip_forward"]
				return !fwd && c.Linux.Sysctl["net.core.somaxconn"] == "1024"
			},
		},
		{name: "sysctl conflict", wantErr: `Sysctl "k"`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"k": "1"}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"k": "2"}})}}},
		{
			name:  "net devices set and removed",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}}})}, {"20-b", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-eth2": nil}})}},
			want:  linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}, "-eth2": nil}}),
			view:  func(c *api.Container) bool { return c.GetLinux().GetNetDevices()["eth1"].GetName() == "net1" },
		},
		{
			name:  "a replaced namespace keeps its place",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "pid", Path: "/proc/9/ns/pid"}}})}},
			want:  linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "pid", Path: "/proc/9/ns/pid"}}}),
			view: func(c *api.Container) bool {
				ns := c.GetLinux().GetNamespaces()
				return len(ns) == 2 && ns[0].GetType() == "pid" && ns[0].GetPath() == "/proc/9/ns/pid" && ns[1].GetType() == "network"
			},
		},
		{name: "net device conflict", wantErr: `LinuxNetDevices "eth1"`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {}}})}, {"20-b", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {}}})}}},
		{
			name:  "RDT removed, then set again by the remover",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}})}, {"10-a", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{Value: "gold"}}})}},
			want:  linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{Value: "gold"}}}),
		},
		{
			name:  "RDT remove alone is forwarded",
			steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}})}},
			want:  linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}}),
		},
		{name: "RDT schemata conflict", wantErr: "RdtSchemata", steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{}}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{}}})}}},
		{name: "RDT removed by one plugin, set by another", wantErr: `plugins "20-b" and "10-a" both tried to set RdtClosID`, steps: []step{{"10-a", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}})}, {"20-b", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{}}})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := proto.CloneOf(base)
			a := merge.NewAdjustment(merge.NewOwners(), orig)
			var err error
			for _, s := range tc.steps {
				if err = a.Apply(s.plugin, s.adj); err != nil {
					break
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(a.Result(), tc.want) {
				t.Errorf("merged\n%v\nwant\n%v", a.Result(), tc.want)
			}
			if tc.view != nil && !tc.view(a.Container()) {
				t.Errorf("next plugin sees %v", a.Container())
			}
			if !proto.Equal(orig, base) {
				t.Error("the caller's container was modified")
			}
		})
	}
}
