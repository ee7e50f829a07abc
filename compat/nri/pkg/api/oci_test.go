package api_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/containerd/nri/pkg/api"
)

func ptr[T any](v T) *T { return &v }

// diff compares NRI messages (or lists and maps of them) field by field.
func diff(want, got any) string { return cmp.Diff(want, got, protocmp.Transform()) }

func TestFromOCIMounts(t *testing.T) {
	if got := api.FromOCIMounts(nil); got != nil {
		t.Errorf("FromOCIMounts(nil) = %v, want nil", got)
	}
	if got := api.FromOCIMounts([]rspec.Mount{}); got != nil {
		t.Errorf("FromOCIMounts(empty) = %v, want nil", got)
	}
	in := []rspec.Mount{
		{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "ro"}},
		{Destination: "/proc", Type: "proc", Source: "proc"},
	}
	want := []*api.Mount{
		{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "ro"}},
		{Destination: "/proc", Type: "proc", Source: "proc"},
	}
	got := api.FromOCIMounts(in)
	if d := diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	in[0].Options[0] = "changed"
	if got[0].Options[0] != "rbind" {
		t.Errorf("the NRI mount shares its options with the spec")
	}
}

func TestFromOCIHooks(t *testing.T) {
	if got := api.FromOCIHooks(nil); got != nil {
		t.Errorf("FromOCIHooks(nil) = %v, want nil", got)
	}
	hook := func(p string, timeout *int) rspec.Hook {
		return rspec.Hook{Path: p, Args: []string{p, "-x"}, Env: []string{"A=1"}, Timeout: timeout}
	}
	nriHook := func(p string, timeout *int) *api.Hook {
		return &api.Hook{Path: p, Args: []string{p, "-x"}, Env: []string{"A=1"}, Timeout: api.Int(timeout)}
	}
	in := &rspec.Hooks{
		Prestart:        []rspec.Hook{hook("/a", nil)}, //nolint:staticcheck // still carried by NRI
		CreateRuntime:   []rspec.Hook{hook("/b", ptr(5))},
		CreateContainer: []rspec.Hook{hook("/c", nil)},
		StartContainer:  []rspec.Hook{hook("/d", nil)},
		Poststart:       []rspec.Hook{hook("/e", ptr(0))},
		Poststop:        []rspec.Hook{hook("/f", nil), hook("/g", nil)},
	}
	want := &api.Hooks{
		Prestart:        []*api.Hook{nriHook("/a", nil)},
		CreateRuntime:   []*api.Hook{nriHook("/b", ptr(5))},
		CreateContainer: []*api.Hook{nriHook("/c", nil)},
		StartContainer:  []*api.Hook{nriHook("/d", nil)},
		Poststart:       []*api.Hook{nriHook("/e", ptr(0))},
		Poststop:        []*api.Hook{nriHook("/f", nil), nriHook("/g", nil)},
	}
	got := api.FromOCIHooks(in)
	if d := diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if got.Prestart[0].Timeout != nil || got.Poststart[0].Timeout.GetValue() != 0 || got.Poststart[0].Timeout == nil {
		t.Errorf("timeouts: absent must stay absent, 0 must stay 0")
	}
	if empty := api.FromOCIHooks(&rspec.Hooks{}); empty == nil || empty.Hooks() != nil {
		t.Errorf("FromOCIHooks(empty) = %v, want empty hooks", empty)
	}
}

func TestFromOCILinuxDevices(t *testing.T) {
	mode := os.FileMode(0o620)
	in := []rspec.LinuxDevice{
		{Path: "/dev/null", Type: "c", Major: 1, Minor: 3},
		{Path: "/dev/ttyX", Type: "c", Major: 4, Minor: 64, FileMode: &mode, UID: ptr(uint32(0)), GID: ptr(uint32(5))},
	}
	want := []*api.LinuxDevice{
		{Path: "/dev/null", Type: "c", Major: 1, Minor: 3},
		{Path: "/dev/ttyX", Type: "c", Major: 4, Minor: 64, FileMode: api.FileMode(mode), Uid: api.UInt32(uint32(0)), Gid: api.UInt32(uint32(5))},
	}
	if d := diff(want, api.FromOCILinuxDevices(in)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if got := api.FromOCILinuxDevices(nil); got != nil {
		t.Errorf("FromOCILinuxDevices(nil) = %v, want nil", got)
	}
}

func TestFromOCILinuxNamespaces(t *testing.T) {
	in := []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace, Path: "/var/run/netns/x"}, {Type: rspec.PIDNamespace}}
	want := []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}, {Type: "pid"}}
	if d := diff(want, api.FromOCILinuxNamespaces(in)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if got := api.FromOCILinuxNamespaces(nil); got != nil {
		t.Errorf("FromOCILinuxNamespaces(nil) = %v, want nil", got)
	}
}

func TestLinuxNetDevices(t *testing.T) {
	in := map[string]rspec.LinuxNetDevice{"eth1": {Name: "net1"}, "eth2": {}}
	want := map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}, "eth2": {}}
	got := api.FromOCILinuxNetDevices(in)
	if d := diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if back := api.ToOCILinuxNetDevices(got); !cmp.Equal(back, in) {
		t.Errorf("round trip: %v, want %v", back, in)
	}
	if api.FromOCILinuxNetDevices(map[string]rspec.LinuxNetDevice{}) != nil || api.ToOCILinuxNetDevices(nil) != nil {
		t.Errorf("empty input must give nil")
	}
	if got := api.ToOCILinuxNetDevices(map[string]*api.LinuxNetDevice{"eth3": nil}); got["eth3"] != (rspec.LinuxNetDevice{}) {
		t.Errorf("nil device: %v", got)
	}
}

func TestFromOCILinuxResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *rspec.LinuxResources
		want *api.LinuxResources
	}{
		{"nil", nil, nil},
		{"empty", &rspec.LinuxResources{}, &api.LinuxResources{}},
		{
			"full",
			&rspec.LinuxResources{
				Memory: &rspec.LinuxMemory{Limit: ptr(int64(1 << 30)), Reservation: ptr(int64(1 << 20)), Swap: ptr(int64(2 << 30)),
					Kernel: ptr(int64(7)), KernelTCP: ptr(int64(8)), Swappiness: ptr(uint64(10)), //nolint:staticcheck // still carried by NRI
					DisableOOMKiller: ptr(true), UseHierarchy: ptr(false)},
				CPU: &rspec.LinuxCPU{Shares: ptr(uint64(512)), Quota: ptr(int64(50000)), Period: ptr(uint64(100000)),
					RealtimeRuntime: ptr(int64(1)), RealtimePeriod: ptr(uint64(2)), Cpus: "0-3", Mems: "0"},
				HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1 << 21}},
				Devices:        []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: ptr(int64(1)), Minor: ptr(int64(3)), Access: "rw"}},
				Pids:           &rspec.LinuxPids{Limit: ptr(int64(100))},
				Unified:        map[string]string{"memory.high": "max"},
				BlockIO:        &rspec.LinuxBlockIO{Weight: ptr(uint16(10))},
			},
			&api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: api.Int64(int64(1 << 30)), Reservation: api.Int64(int64(1 << 20)), Swap: api.Int64(int64(2 << 30)),
					Kernel: api.Int64(int64(7)), KernelTcp: api.Int64(int64(8)), Swappiness: api.UInt64(uint64(10)),
					DisableOomKiller: api.Bool(true), UseHierarchy: api.Bool(false)},
				Cpu: &api.LinuxCPU{Shares: api.UInt64(uint64(512)), Quota: api.Int64(int64(50000)), Period: api.UInt64(uint64(100000)),
					RealtimeRuntime: api.Int64(int64(1)), RealtimePeriod: api.UInt64(uint64(2)), Cpus: "0-3", Mems: "0"},
				HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 21}},
				Devices:        []*api.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: api.Int64(int64(1)), Minor: api.Int64(int64(3)), Access: "rw"}},
				Pids:           &api.LinuxPids{Limit: 100},
				Unified:        map[string]string{"memory.high": "max"},
			},
		},
		{"unlimited pids", &rspec.LinuxResources{Pids: &rspec.LinuxPids{}}, &api.LinuxResources{Pids: &api.LinuxPids{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := api.FromOCILinuxResources(tc.in, nil)
			if d := diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
			if tc.in != nil && tc.in.Unified != nil {
				tc.in.Unified["memory.high"] = "1"
				if got.Unified["memory.high"] != "max" {
					t.Errorf("the NRI resources share unified with the spec")
				}
			}
		})
	}
}

func TestProcessSettings(t *testing.T) {
	t.Run("io priority", func(t *testing.T) {
		if api.FromOCILinuxIOPriority(nil) != nil {
			t.Errorf("nil must give nil")
		}
		got := api.FromOCILinuxIOPriority(&rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_BE, Priority: 4})
		if d := diff(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4}, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		if c := api.FromOCIIOPriorityClass("IOPRIO_CLASS_BOGUS"); c != api.IOPrioClass_IOPRIO_CLASS_NONE {
			t.Errorf("unknown class: %v", c)
		}
	})
	t.Run("scheduler", func(t *testing.T) {
		if api.FromOCILinuxScheduler(nil) != nil {
			t.Errorf("nil must give nil")
		}
		in := &rspec.Scheduler{Policy: rspec.SchedFIFO, Nice: -5, Priority: 10, Runtime: 1, Deadline: 2, Period: 3,
			Flags: []rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork, rspec.SchedFlagUtilClampMax}}
		want := &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Nice: -5, Priority: 10, Runtime: 1, Deadline: 2, Period: 3,
			Flags: []api.LinuxSchedulerFlag{api.LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK, api.LinuxSchedulerFlag_SCHED_FLAG_UTIL_CLAMP_MAX}}
		got := api.FromOCILinuxScheduler(in)
		if d := diff(want, got); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if back := api.ToOCILinuxSchedulerFlags(got.Flags); !cmp.Equal(back, in.Flags) {
			t.Errorf("flags round trip: %v, want %v", back, in.Flags)
		}
		if api.FromOCILinuxSchedulerFlags(nil) != nil || api.ToOCILinuxSchedulerFlags(nil) != nil {
			t.Errorf("nil flags must give nil")
		}
		if p := api.FromOCISchedulerPolicy("SCHED_BOGUS"); p != api.LinuxSchedulerPolicy_SCHED_NONE {
			t.Errorf("unknown policy: %v", p)
		}
	})
	t.Run("memory policy", func(t *testing.T) {
		if api.FromOCILinuxMemoryPolicy(nil) != nil {
			t.Errorf("nil must give nil")
		}
		in := &rspec.LinuxMemoryPolicy{Mode: rspec.MpolInterleave, Nodes: "0-1", Flags: []rspec.MemoryPolicyFlagType{rspec.MpolFStaticNodes, rspec.MpolFRelativeNodes}}
		want := &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_INTERLEAVE, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES, api.MpolFlag_MPOL_F_RELATIVE_NODES}}
		got := api.FromOCILinuxMemoryPolicy(in)
		if d := diff(want, got); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if back := api.ToOCIMemoryPolicyFlags(got.Flags...); !cmp.Equal(back, in.Flags) {
			t.Errorf("flags round trip: %v, want %v", back, in.Flags)
		}
		if api.FromOCIMemoryPolicyFlags() != nil || api.ToOCIMemoryPolicyFlags() != nil {
			t.Errorf("no flags must give nil")
		}
		if m := api.FromOCIMemoryPolicyMode(rspec.MpolBind); m != api.MpolMode_MPOL_BIND {
			t.Errorf("mode: %v", m)
		}
	})
}

func TestSeccomp(t *testing.T) {
	if api.FromOCILinuxSeccomp(nil) != nil {
		t.Errorf("FromOCILinuxSeccomp(nil) must give nil")
	}
	in := &rspec.LinuxSeccomp{
		DefaultAction:    rspec.ActErrno,
		DefaultErrnoRet:  ptr(uint(1)),
		Architectures:    []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64},
		Flags:            []rspec.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_LOG"},
		ListenerPath:     "/run/seccomp.sock",
		ListenerMetadata: "meta",
		Syscalls: []rspec.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: rspec.ActAllow},
			{Names: []string{"kill"}, Action: rspec.ActErrno, ErrnoRet: ptr(uint(13)),
				Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 9, ValueTwo: 0, Op: rspec.OpEqualTo}}},
		},
	}
	want := &api.LinuxSeccomp{
		DefaultAction:    "SCMP_ACT_ERRNO",
		DefaultErrno:     &api.OptionalUInt32{Value: 1},
		Architectures:    []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"},
		Flags:            []string{"SECCOMP_FILTER_FLAG_LOG"},
		ListenerPath:     "/run/seccomp.sock",
		ListenerMetadata: "meta",
		Syscalls: []*api.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: "SCMP_ACT_ALLOW", Args: []*api.LinuxSeccompArg{}},
			{Names: []string{"kill"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &api.OptionalUInt32{Value: 13},
				Args: []*api.LinuxSeccompArg{{Index: 1, Value: 9, Op: "SCMP_CMP_EQ"}}},
		},
	}
	got := api.FromOCILinuxSeccomp(in)
	if d := diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	back := api.ToOCILinuxSyscalls(got.Syscalls)
	if d := cmp.Diff(in.Syscalls, back, cmp.Transformer("args", func(a []rspec.LinuxSeccompArg) []rspec.LinuxSeccompArg {
		if len(a) == 0 {
			return nil
		}
		return a
	})); d != "" {
		t.Errorf("syscalls round trip (-spec +back):\n%s", d)
	}
	if empty := api.FromOCILinuxSeccomp(&rspec.LinuxSeccomp{}); empty.Architectures == nil || empty.Syscalls == nil {
		t.Errorf("lists must be present, as upstream: %v", empty)
	}
}
