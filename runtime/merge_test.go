package runtime

import (
	"errors"
	"slices"
	"testing"

	"github.com/nrinet/nrinet/api"
)

func TestAdjustment_Apply(t *testing.T) {
	type step struct {
		plugin string
		adj    *api.ContainerAdjustment
	}
	ctr := &api.Container{Id: "c1", Env: []string{"PATH=/bin"}, Annotations: map[string]string{"keep": "1"}}
	for _, tc := range []struct {
		name     string
		steps    []step
		conflict string // the field named by the expected conflict, if any
		check    func(t *testing.T, a *adjustment)
	}{
		{
			name: "forced args drop the marker",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Args: []string{"sleep", "1"}}},
				{"20-b", &api.ContainerAdjustment{Args: []string{"", "sleep", "2"}}},
			},
			check: func(t *testing.T, a *adjustment) {
				if !slices.Equal(a.merged.Args, []string{"sleep", "2"}) || !slices.Equal(a.view.Args, []string{"sleep", "2"}) {
					t.Errorf("args merged %q, view %q", a.merged.Args, a.view.Args)
				}
			},
		},
		{
			name: "args of another plugin conflict",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Args: []string{"a"}}},
				{"20-b", &api.ContainerAdjustment{Args: []string{"b"}}},
			},
			conflict: `Args of container "c1"`,
		},
		{
			name: "env removal and view",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "-PATH"}, {Key: "X", Value: "1"}}}},
			},
			check: func(t *testing.T, a *adjustment) {
				if !slices.Equal(a.view.Env, []string{"X=1"}) {
					t.Errorf("view env %q", a.view.Env)
				}
				if ctr.Env[0] != "PATH=/bin" || len(ctr.Env) != 1 {
					t.Errorf("caller's container was modified: %q", ctr.Env)
				}
			},
		},
		{
			name: "a plugin may set its own annotation again",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"k": "1"}}},
				{"10-a", &api.ContainerAdjustment{Annotations: map[string]string{"k": "2"}}},
			},
			check: func(t *testing.T, a *adjustment) {
				if a.merged.Annotations["k"] != "2" {
					t.Errorf("annotations %v", a.merged.Annotations)
				}
			},
		},
		{
			name: "memory limit conflict",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}}}}}},
				{"20-b", &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2}}}}}},
			},
			conflict: `MemLimit of container "c1"`,
		},
		{
			name: "device cgroup rules append without ownership",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c"}}}}}},
				{"20-b", &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: false, Type: "b"}}}}}},
			},
			check: func(t *testing.T, a *adjustment) {
				if n := len(a.merged.GetLinux().GetResources().GetDevices()); n != 2 {
					t.Errorf("%d device rules, want 2", n)
				}
			},
		},
		{
			name: "later plugins see Linux settings",
			steps: []step{
				{"10-a", &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{
					CgroupsPath: "/custom",
					Sysctl:      map[string]string{"net.core.somaxconn": "1024"},
					Namespaces:  []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}},
				}}},
			},
			check: func(t *testing.T, a *adjustment) {
				l := a.view.GetLinux()
				if l.GetCgroupsPath() != "/custom" || l.GetSysctl()["net.core.somaxconn"] != "1024" || len(l.GetNamespaces()) != 1 {
					t.Errorf("view linux = %v", l)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdjustment(newOwners(), ctr)
			var err error
			for _, s := range tc.steps {
				if err = a.apply(s.plugin, s.adj); err != nil {
					break
				}
			}
			if tc.conflict != "" {
				var cerr *ConflictError
				if !errors.As(err, &cerr) || cerr.Field != tc.conflict {
					t.Fatalf("error = %v, want a conflict on %s", err, tc.conflict)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, a)
		})
	}
}

func TestUpdates_SkippedUpdateLeavesNoClaims(t *testing.T) {
	o := newOwners()
	u := newUpdates(o)
	mem := func(v int64) *api.LinuxContainerUpdate {
		return &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: v}},
			Cpu:    &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: uint64(v)}},
		}}
	}
	if err := u.apply("10-a", []*api.ContainerUpdate{{ContainerId: "c2", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	// 20-b conflicts on the memory limit; its update is optional and skipped,
	// so its CPU shares claim must not stick.
	if err := u.apply("20-b", []*api.ContainerUpdate{{ContainerId: "c2", Linux: mem(2), IgnoreFailure: true}}); err != nil {
		t.Fatal(err)
	}
	cpu := &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 3}}}}
	if err := u.apply("30-c", []*api.ContainerUpdate{{ContainerId: "c2", Linux: cpu}}); err != nil {
		t.Fatalf("CPU shares still claimed by a skipped update: %v", err)
	}
	got := u.list("")
	if len(got) != 1 || got[0].GetLinux().GetResources().GetCpu().GetShares().GetValue() != 3 || got[0].GetIgnoreFailure() {
		t.Fatalf("merged updates = %v", got)
	}
}
