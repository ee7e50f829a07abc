package ocispec_test

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

func TestApplyAdjustment(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func() *rspec.Spec // default baseSpec
		adj  *api.ContainerAdjustment
		want *rspec.Spec
	}{
		{
			name: "nil adjustment",
			adj:  nil,
			want: baseSpec(),
		},
		{
			name: "empty adjustment on empty spec creates nothing",
			spec: func() *rspec.Spec { return &rspec.Spec{} },
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{}},
			want: &rspec.Spec{},
		},
		{
			name: "annotations set, replace and remove",
			adj: &api.ContainerAdjustment{Annotations: map[string]string{
				"-a": "", "b": "20", "c": "3", "-missing": "",
			}},
			want: edit(func(s *rspec.Spec) { s.Annotations = map[string]string{"b": "20", "c": "3"} }),
		},
		{
			name: "annotation removal alone creates no map",
			spec: func() *rspec.Spec { return &rspec.Spec{} },
			adj:  &api.ContainerAdjustment{Annotations: map[string]string{"-a": ""}},
			want: &rspec.Spec{},
		},
		{
			name: "annotation removed and set ends up set",
			adj:  &api.ContainerAdjustment{Annotations: map[string]string{"-a": "", "a": "new"}},
			want: edit(func(s *rspec.Spec) { s.Annotations["a"] = "new" }),
		},
		{
			name: "mounts add, replace in place, remove and sort by depth",
			adj: &api.ContainerAdjustment{Mounts: []*api.Mount{
				{Destination: "/var/lib/x", Type: "tmpfs", Source: "tmpfs"},
				{Destination: "-/dev/shm"},
				{Destination: "/data/", Type: "bind", Source: "/new", Options: []string{"rbind", "ro"}},
				{Destination: "/var", Type: "tmpfs", Source: "tmpfs"},
				{Destination: "-/not/there"},
			}},
			want: edit(func(s *rspec.Spec) {
				s.Mounts = []rspec.Mount{
					{Destination: "/proc", Type: "proc", Source: "proc"},
					{Destination: "/dev", Type: "tmpfs", Source: "tmpfs"},
					{Destination: "/data/", Type: "bind", Source: "/new", Options: []string{"rbind", "ro"}},
					{Destination: "/var", Type: "tmpfs", Source: "tmpfs"},
					{Destination: "/var/lib/x", Type: "tmpfs", Source: "tmpfs"},
				}
			}),
		},
		{
			name: "mount removed and added ends up added",
			adj: &api.ContainerAdjustment{Mounts: []*api.Mount{
				{Destination: "/dev/shm", Type: "tmpfs", Source: "big"},
				{Destination: "-/dev/shm"},
			}},
			want: edit(func(s *rspec.Spec) {
				s.Mounts[2] = rspec.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "big"}
				s.Mounts[2], s.Mounts[3] = s.Mounts[3], s.Mounts[2]
			}),
		},
		{
			name: "rshared mount sets rootfs propagation",
			adj: &api.ContainerAdjustment{Mounts: []*api.Mount{
				{Destination: "/mnt", Type: "bind", Source: "/host", Options: []string{"rbind", "rshared"}},
			}},
			want: edit(func(s *rspec.Spec) {
				m := rspec.Mount{Destination: "/mnt", Type: "bind", Source: "/host", Options: []string{"rbind", "rshared"}}
				s.Mounts = []rspec.Mount{s.Mounts[0], s.Mounts[1], s.Mounts[3], m, s.Mounts[2]} // /dev/shm is deeper
				s.Linux.RootfsPropagation = "rshared"
			}),
		},
		{
			name: "rslave mount keeps rshared rootfs",
			spec: func() *rspec.Spec { return edit(func(s *rspec.Spec) { s.Linux.RootfsPropagation = "rshared" }) },
			adj: &api.ContainerAdjustment{Mounts: []*api.Mount{
				{Destination: "/mnt", Type: "bind", Source: "/host", Options: []string{"rbind", "rslave"}},
			}},
			want: edit(func(s *rspec.Spec) {
				m := rspec.Mount{Destination: "/mnt", Type: "bind", Source: "/host", Options: []string{"rbind", "rslave"}}
				s.Mounts = []rspec.Mount{s.Mounts[0], s.Mounts[1], s.Mounts[3], m, s.Mounts[2]} // /dev/shm is deeper
				s.Linux.RootfsPropagation = "rshared"
			}),
		},
		{
			name: "env set in place, append, remove, removed-and-set moves to end",
			adj: &api.ContainerAdjustment{Env: []*api.KeyValue{
				{Key: "PATH", Value: "/usr/bin"},
				{Key: "-B"},
				{Key: "A", Value: "10"},
				{Key: "D", Value: "4"},
				{Key: "-E"},
				{Key: "C", Value: "3"},
				{Key: "-PATH"},
				{Key: "D", Value: "40"},
			}},
			want: edit(func(s *rspec.Spec) { s.Process.Env = []string{"A=10", "C=3", "PATH=/usr/bin", "D=40"} }),
		},
		{
			name: "args replaced",
			adj:  &api.ContainerAdjustment{Args: []string{"/bin/true", "x"}},
			want: edit(func(s *rspec.Spec) { s.Process.Args = []string{"/bin/true", "x"} }),
		},
		{
			name: "args with replace marker",
			adj:  &api.ContainerAdjustment{Args: []string{"", "/bin/true"}},
			want: edit(func(s *rspec.Spec) { s.Process.Args = []string{"/bin/true"} }),
		},
		{
			name: "args with only the replace marker change nothing",
			adj:  &api.ContainerAdjustment{Args: []string{""}},
			want: baseSpec(),
		},
		{
			name: "hooks appended by phase",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Hooks = &rspec.Hooks{Poststop: []rspec.Hook{{Path: "/old"}}} })
			},
			adj: &api.ContainerAdjustment{Hooks: &api.Hooks{
				Prestart:        []*api.Hook{{Path: "/pre"}},
				CreateRuntime:   []*api.Hook{{Path: "/cr", Args: []string{"cr", "x"}, Env: []string{"K=V"}}},
				CreateContainer: []*api.Hook{{Path: "/cc"}},
				StartContainer:  []*api.Hook{{Path: "/sc", Timeout: oInt(5)}},
				Poststart:       []*api.Hook{{Path: "/ps"}},
				Poststop:        []*api.Hook{{Path: "/new1"}, {Path: "/new2"}},
			}},
			want: edit(func(s *rspec.Spec) {
				s.Hooks = &rspec.Hooks{
					Prestart:        []rspec.Hook{{Path: "/pre"}},
					CreateRuntime:   []rspec.Hook{{Path: "/cr", Args: []string{"cr", "x"}, Env: []string{"K=V"}}},
					CreateContainer: []rspec.Hook{{Path: "/cc"}},
					StartContainer:  []rspec.Hook{{Path: "/sc", Timeout: p(5)}},
					Poststart:       []rspec.Hook{{Path: "/ps"}},
					Poststop:        []rspec.Hook{{Path: "/old"}, {Path: "/new1"}, {Path: "/new2"}},
				}
			}),
		},
		{
			name: "rlimits replace same type and append",
			adj: &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
				{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 2048},
			}},
			want: edit(func(s *rspec.Spec) {
				s.Process.Rlimits = []rspec.POSIXRlimit{
					{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 2048},
					{Type: "RLIMIT_CORE"},
				}
			}),
		},
		{
			name: "devices add with cgroup rule, remove drops its rule",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{
				{Path: "-/dev/fuse"},
				{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0, FileMode: &api.OptionalFileMode{Value: 0o660}, Uid: oUint32(0), Gid: oUint32(6)},
				{Path: "/dev/ttyX", Type: "u", Major: 4, Minor: 64},
				{Path: "/dev/fifo", Type: "p"},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Devices = []rspec.LinuxDevice{
					{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0, FileMode: mode(0o660), UID: p(uint32(0)), GID: p(uint32(6))},
					{Path: "/dev/ttyX", Type: "u", Major: 4, Minor: 64},
					{Path: "/dev/fifo", Type: "p"},
				}
				s.Linux.Resources.Devices = []rspec.LinuxDeviceCgroup{
					{Allow: false, Access: "rwm"},
					{Allow: true, Type: "b", Major: p(int64(8)), Minor: p(int64(0)), Access: "rwm"},
					{Allow: true, Type: "c", Major: p(int64(4)), Minor: p(int64(64)), Access: "rwm"},
				}
			}),
		},
		{
			name: "device replaced in place, rule renewed",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{
				{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 230},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Devices = []rspec.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 230}}
				s.Linux.Resources.Devices = []rspec.LinuxDeviceCgroup{
					{Allow: false, Access: "rwm"},
					{Allow: true, Type: "c", Major: p(int64(10)), Minor: p(int64(230)), Access: "rwm"},
				}
			}),
		},
		{
			name: "removing one of two devices of a node keeps the rule",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) {
					s.Linux.Devices = append(s.Linux.Devices, rspec.LinuxDevice{Path: "/dev/fuse2", Type: "c", Major: 10, Minor: 229})
				})
			},
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/fuse"}}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Devices = []rspec.LinuxDevice{{Path: "/dev/fuse2", Type: "c", Major: 10, Minor: 229}}
			}),
		},
		{
			name: "resources",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: oInt64(2 << 30), Reservation: oInt64(0), Swappiness: oUint64(0), DisableOomKiller: oBool(false)},
				Cpu:    &api.LinuxCPU{Quota: oInt64(50000), Period: oUint64(100000), Mems: "0"},
				HugepageLimits: []*api.HugepageLimit{
					{PageSize: "2MB", Limit: 1 << 21},
					{PageSize: "1GB", Limit: 1 << 30},
					{PageSize: "2MB", Limit: 1 << 22},
				},
				Unified: map[string]string{"memory.high": "max", "cpu.idle": "0"},
				Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: oInt64(1), Access: "r"}},
				Pids:    &api.LinuxPids{Limit: 100},
			}}},
			want: edit(func(s *rspec.Spec) {
				r := s.Linux.Resources
				r.Memory = &rspec.LinuxMemory{Limit: p(int64(2 << 30)), Swap: p(int64(2 << 30)), Reservation: p(int64(0)), Swappiness: p(uint64(0)), DisableOOMKiller: p(false)}
				r.CPU = &rspec.LinuxCPU{Shares: p(uint64(1024)), Quota: p(int64(50000)), Period: p(uint64(100000)), Cpus: "0-3", Mems: "0"}
				r.HugepageLimits = []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1 << 22}, {Pagesize: "1GB", Limit: 1 << 30}}
				r.Unified = map[string]string{"memory.high": "max", "cpu.idle": "0"}
				r.Devices = append(r.Devices, rspec.LinuxDeviceCgroup{Allow: true, Type: "c", Major: p(int64(1)), Access: "r"})
				r.Pids = &rspec.LinuxPids{Limit: p(int64(100))}
			}),
		},
		{
			name: "resources on empty spec create the structs",
			spec: func() *rspec.Spec { return &rspec.Spec{} },
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{
				Cpu: &api.LinuxCPU{Shares: oUint64(2)},
			}}},
			want: &rspec.Spec{Linux: &rspec.Linux{Resources: &rspec.LinuxResources{CPU: &rspec.LinuxCPU{Shares: p(uint64(2))}}}},
		},
		{
			name: "cgroups path and OOM score",
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{CgroupsPath: "/new", OomScoreAdj: oInt(0)}},
			want: edit(func(s *rspec.Spec) { s.Linux.CgroupsPath = "/new"; s.Process.OOMScoreAdj = p(0) }),
		},
		{
			name: "I/O priority",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{
				Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4,
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Process.IOPriority = &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_BE, Priority: 4}
			}),
		},
		{
			name: "I/O priority class NONE clears",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Process.IOPriority = &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_RT} })
			},
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{}}},
			want: baseSpec(),
		},
		{
			name: "seccomp policy replaced",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow} })
			},
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{
				DefaultAction: "SCMP_ACT_ERRNO",
				DefaultErrno:  oUint32(1),
				Architectures: []string{"SCMP_ARCH_X86_64"},
				Flags:         []string{"SECCOMP_FILTER_FLAG_LOG"},
				Syscalls: []*api.LinuxSyscall{{
					Names:  []string{"read", "write"},
					Action: "SCMP_ACT_ALLOW",
					Args:   []*api.LinuxSeccompArg{{Index: 0, Value: 1, Op: "SCMP_CMP_EQ"}},
				}},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Seccomp = &rspec.LinuxSeccomp{
					DefaultAction:   rspec.ActErrno,
					DefaultErrnoRet: p(uint(1)),
					Architectures:   []rspec.Arch{rspec.ArchX86_64},
					Flags:           []rspec.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_LOG"},
					Syscalls: []rspec.LinuxSyscall{{
						Names:  []string{"read", "write"},
						Action: rspec.ActAllow,
						Args:   []rspec.LinuxSeccompArg{{Index: 0, Value: 1, Op: rspec.OpEqualTo}},
					}},
				}
			}),
		},
		{
			name: "namespaces remove, replace and add",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{
				{Type: "-net"},
				{Type: "pid", Path: "/proc/1/ns/pid"},
				{Type: "ipc"},
				{Type: "-cgroup"},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Namespaces = []rspec.LinuxNamespace{
					{Type: rspec.PIDNamespace, Path: "/proc/1/ns/pid"},
					{Type: rspec.MountNamespace},
					{Type: rspec.IPCNamespace},
				}
			}),
		},
		{
			name: "sysctl set and remove",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Sysctl: map[string]string{
				"-net.ipv4.ip_forward": "", "net.core.somaxconn": "1024",
			}}},
			want: edit(func(s *rspec.Spec) { s.Linux.Sysctl = map[string]string{"net.core.somaxconn": "1024"} }),
		},
		{
			name: "net devices set and remove",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.NetDevices = map[string]rspec.LinuxNetDevice{"eth1": {Name: "net1"}} })
			},
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{
				"-eth1": nil, "eth2": {Name: "net2"}, "eth3": nil,
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.NetDevices = map[string]rspec.LinuxNetDevice{"eth2": {Name: "net2"}, "eth3": {}}
			}),
		},
		{
			name: "scheduler",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{
				Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10,
				Flags: []api.LinuxSchedulerFlag{api.LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Process.Scheduler = &rspec.Scheduler{
					Policy: rspec.SchedFIFO, Priority: 10, Flags: []rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork},
				}
			}),
		},
		{
			name: "scheduler SCHED_NONE clears",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Process.Scheduler = &rspec.Scheduler{Policy: rspec.SchedBatch} })
			},
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{}}},
			want: baseSpec(),
		},
		{
			name: "RDT remove",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "old", L3CacheSchema: "L3:0=f"} })
			},
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}}},
			want: baseSpec(),
		},
		{
			name: "RDT remove then set fields",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "old", L3CacheSchema: "L3:0=f"} })
			},
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
				Remove:           true,
				ClosId:           oString("gold"),
				Schemata:         &api.OptionalRepeatedString{Value: []string{"L3:0=ff"}},
				EnableMonitoring: oBool(true),
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "gold", Schemata: []string{"L3:0=ff"}, EnableMonitoring: true}
			}),
		},
		{
			name: "RDT update keeps other fields",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "old", L3CacheSchema: "L3:0=f"} })
			},
			adj:  &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: oString("")}}},
			want: edit(func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{L3CacheSchema: "L3:0=f"} }),
		},
		{
			name: "memory policy",
			adj: &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{
				Mode: api.MpolMode_MPOL_BIND, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES},
			}}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.MemoryPolicy = &rspec.LinuxMemoryPolicy{
					Mode: rspec.MpolBind, Nodes: "0-1", Flags: []rspec.MemoryPolicyFlagType{rspec.MpolFStaticNodes},
				}
			}),
		},
		{
			name: "CDI devices are left to the caller",
			adj:  &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=0"}}},
			want: baseSpec(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			if tc.spec != nil {
				spec = tc.spec()
			}
			if err := ocispec.ApplyAdjustment(spec, tc.adj); err != nil {
				t.Fatalf("ApplyAdjustment: %v", err)
			}
			check(t, tc.want, spec)
		})
	}
}

func TestApplyAdjustmentNilSpec(t *testing.T) {
	if err := ocispec.ApplyAdjustment(nil, &api.ContainerAdjustment{}); err == nil {
		t.Fatal("ApplyAdjustment(nil spec) succeeded")
	}
}
