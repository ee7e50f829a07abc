package ocispec_test

import (
	"errors"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

// linux wraps a Linux adjustment into a container adjustment.
func linux(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

// resources wraps resources into a container adjustment.
func resources(r *api.LinuxResources) *api.ContainerAdjustment {
	return linux(&api.LinuxContainerAdjustment{Resources: r})
}

func TestApplyAdjustmentInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		adj  *api.ContainerAdjustment
		want string // error text
		is   error  // default ErrInvalid
	}{
		{"empty annotation key", &api.ContainerAdjustment{Annotations: map[string]string{"-": ""}},
			`annotations["-"] "-": empty key`, nil},
		{"empty mount destination", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: ""}}},
			`mounts[0].destination "": not an absolute path`, nil},
		{"relative mount destination", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "/ok"}, {Destination: "data"}}},
			`mounts[1].destination "data": not an absolute path`, nil},
		{"bare mount removal marker", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-"}}},
			`mounts[0].destination "-": not an absolute path`, nil},
		{"nil mount", &api.ContainerAdjustment{Mounts: []*api.Mount{nil}},
			`mounts[0] "<nil>": nil mount`, nil},
		{"empty env key", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "", Value: "x"}}},
			`env[0].key "": not a valid variable name`, nil},
		{"env key with =", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A=B"}}},
			`env[0].key "A=B": not a valid variable name`, nil},
		{"relative hook path", &api.ContainerAdjustment{Hooks: &api.Hooks{Poststop: []*api.Hook{{Path: "hook"}}}},
			`hooks.poststop[0].path "hook": not an absolute path`, nil},
		{"zero hook timeout", &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/h", Timeout: oInt(0)}}}},
			`hooks.prestart[0].timeout 0: must be positive`, nil},
		{"invalid rlimit type", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}},
			`rlimits[0].type "RLIMIT_BOGUS": unknown rlimit type`, nil},
		{"rlimit soft above hard", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_CORE", Soft: 2, Hard: 1}}},
			`rlimits[0].soft 2: exceeds hard limit 1`, nil},
		{"unknown device type", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "x"}}}),
			`linux.devices[0].type "x": unknown device type (want "c", "u", "b" or "p")`, nil},
		{"relative device path", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-dev/x"}}}),
			`linux.devices[0].path "-dev/x": not an absolute path`, nil},
		{"negative device major", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "c", Major: -1}}}),
			`linux.devices[0].major -1: negative device number`, nil},
		{"OOM score out of range", linux(&api.LinuxContainerAdjustment{OomScoreAdj: oInt(1001)}),
			`linux.oom_score_adj 1001: out of range [-1000, 1000]`, nil},
		{"unknown I/O priority class", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: 9}}),
			`linux.io_priority.class 9: unknown I/O priority class`, nil},
		{"I/O priority out of range", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 8}}),
			`linux.io_priority.priority 8: out of range [0, 7]`, nil},
		{"seccomp without default action", linux(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{}}),
			`linux.seccomp_policy.default_action "": empty action`, nil},
		{"seccomp rule without names", linux(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Syscalls: []*api.LinuxSyscall{{Action: "SCMP_ACT_ERRNO"}}}}),
			`linux.seccomp_policy.syscalls[0].names []: no syscall names`, nil},
		{"unknown namespace type", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "bogus"}}}),
			`linux.namespaces[0].type "bogus": unknown namespace type`, nil},
		{"unknown namespace removal", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-bogus"}}}),
			`linux.namespaces[0].type "-bogus": unknown namespace type`, nil},
		{"relative namespace path", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "net", Path: "ns/net"}}}),
			`linux.namespaces[0].path "ns/net": not an absolute path`, nil},
		{"empty sysctl key", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"": "1"}}),
			`linux.sysctl[""] "": empty key`, nil},
		{"bad net device host name", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"a/b": {}}}),
			`linux.net_devices["a/b"] "a/b": not a valid interface name`, nil},
		{"bad net device name", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {Name: "much-too-long-name"}}}),
			`linux.net_devices["eth1"].name "much-too-long-name": not a valid interface name`, nil},
		{"unknown scheduling policy", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: 42}}),
			`linux.scheduler.policy 42: unknown scheduling policy`, nil},
		{"unknown scheduling flag", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_RR, Flags: []api.LinuxSchedulerFlag{42}}}),
			`linux.scheduler.flags[0] 42: unknown scheduling flag`, nil},
		{"unknown memory policy mode", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Mode: 42}}),
			`linux.memory_policy.mode 42: unknown memory policy mode`, nil},
		{"unknown memory policy flag", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Flags: []api.MpolFlag{42}}}),
			`linux.memory_policy.flags[0] 42: unknown memory policy flag`, nil},
		{"empty hugepage size", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{Limit: 1}}}),
			`linux.resources.hugepage_limits[0].page_size "": empty page size`, nil},
		{"bad unified key", resources(&api.LinuxResources{Unified: map[string]string{"../x": "1"}}),
			`linux.resources.unified "../x": not a cgroup file name`, nil},
		{"bad device rule type", resources(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Type: "x"}}}),
			`linux.resources.devices[0].type "x": unknown device rule type (want "a", "b" or "c")`, nil},
		{"bad device rule access", resources(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Type: "c", Access: "rwx"}}}),
			`linux.resources.devices[0].access "rwx": access must consist of "r", "w" and "m"`, nil},
		{"block I/O class without resolver", resources(&api.LinuxResources{BlockioClass: oString("gold")}),
			`linux.resources.blockio_class "gold": block I/O class given but no resolver configured (WithBlockIOClassResolver)`, ocispec.ErrNoResolver},
		{"RDT class without resolver", resources(&api.LinuxResources{RdtClass: oString("gold")}),
			`linux.resources.rdt_class "gold": RDT class given but no resolver configured (WithRDTClassResolver)`, ocispec.ErrNoResolver},
		// A valid adjustment with one bad field at the end: nothing of it
		// may be applied.
		{"late error leaves everything", &api.ContainerAdjustment{
			Annotations: map[string]string{"-a": "", "z": "1"},
			Mounts:      []*api.Mount{{Destination: "-/proc"}},
			Env:         []*api.KeyValue{{Key: "-PATH"}},
			Args:        []string{"/bin/true"},
			Linux: &api.LinuxContainerAdjustment{
				Devices:      []*api.LinuxDevice{{Path: "-/dev/fuse"}},
				Sysctl:       map[string]string{"-net.ipv4.ip_forward": ""},
				CgroupsPath:  "/x",
				MemoryPolicy: &api.LinuxMemoryPolicy{Mode: 99},
			},
		}, `linux.memory_policy.mode 99: unknown memory policy mode`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			err := ocispec.ApplyAdjustment(spec, tc.adj)
			if err == nil {
				t.Fatal("ApplyAdjustment succeeded")
			}
			is := tc.is
			if is == nil {
				is = ocispec.ErrInvalid
			}
			if !errors.Is(err, is) {
				t.Errorf("error %v does not wrap %v", err, is)
			}
			if got, want := err.Error(), "ocispec: "+tc.want; got != want {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
			check(t, baseSpec(), spec)
		})
	}
}

func TestResolverFailures(t *testing.T) {
	failing := ocispec.WithBlockIOClassResolver(func(string) (*rspec.LinuxBlockIO, error) {
		return nil, errors.New("boom")
	})
	empty := ocispec.WithRDTClassResolver(func(string) (*rspec.LinuxIntelRdt, error) { return nil, nil })
	for _, tc := range []struct {
		name string
		r    *api.LinuxResources
		want string
	}{
		{"resolver error", &api.LinuxResources{BlockioClass: oString("gold")},
			`ocispec: blockio_class "gold": cannot resolve block I/O class: boom`},
		{"resolver returns nothing", &api.LinuxResources{RdtClass: oString("gold")},
			`ocispec: rdt_class "gold": RDT class resolver returned no settings`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			err := ocispec.ApplyResources(spec, tc.r, failing, empty)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
			check(t, baseSpec(), spec)
		})
	}
}

func TestNilSpec(t *testing.T) {
	for name, err := range map[string]error{
		"ApplyAdjustment": ocispec.ApplyAdjustment(nil, &api.ContainerAdjustment{}),
		"ApplyResources":  ocispec.ApplyResources(nil, &api.LinuxResources{}),
		"ApplyUpdate":     ocispec.ApplyUpdate(nil, &api.ContainerUpdate{}),
	} {
		if err == nil || !strings.Contains(err.Error(), "nil spec") {
			t.Errorf("%s(nil spec) = %v, want a nil spec error", name, err)
		}
	}
}

// TestNilResolver: a nil resolver is an option's error, which each Apply
// returns before touching the spec.
func TestNilResolver(t *testing.T) {
	adj := resources(&api.LinuxResources{BlockioClass: oString("gold")})
	for _, tc := range []struct {
		opt  ocispec.Option
		want string
	}{
		{ocispec.WithBlockIOClassResolver(nil), "ocispec: WithBlockIOClassResolver: nil function"},
		{ocispec.WithRDTClassResolver(nil), "ocispec: WithRDTClassResolver: nil function"},
	} {
		for name, apply := range map[string]func(*rspec.Spec) error{
			"ApplyAdjustment": func(s *rspec.Spec) error { return ocispec.ApplyAdjustment(s, adj, tc.opt) },
			"ApplyResources":  func(s *rspec.Spec) error { return ocispec.ApplyResources(s, adj.Linux.Resources, tc.opt) },
			"ApplyUpdate": func(s *rspec.Spec) error {
				return ocispec.ApplyUpdate(s, &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: adj.Linux.Resources}}, tc.opt)
			},
		} {
			spec := baseSpec()
			if err := apply(spec); err == nil || err.Error() != tc.want {
				t.Errorf("%s: %v, want %s", name, err, tc.want)
			}
			check(t, baseSpec(), spec)
		}
	}
}
