package merge_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

func memUpdate(id string, limit int64, ignore bool) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: id, IgnoreFailure: ignore, Linux: &api.LinuxContainerUpdate{
		Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: limit}}},
	}}
}

func TestUpdates(t *testing.T) {
	type call struct {
		plugin string
		list   []*api.ContainerUpdate
	}
	for _, tc := range []struct {
		name    string
		calls   []call
		want    []*api.ContainerUpdate
		wantErr string
	}{
		{
			name: "updates of one container from two plugins merge",
			calls: []call{
				{"10-a", []*api.ContainerUpdate{memUpdate("x", 100, false)}},
				{"20-b", []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}}}}}},
			},
			want: []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 100}}, Cpu: &api.LinuxCPU{Cpus: "1"},
			}}}},
		},
		{
			name: "conflicting update fails the request",
			calls: []call{
				{"10-a", []*api.ContainerUpdate{memUpdate("x", 100, false)}},
				{"20-b", []*api.ContainerUpdate{memUpdate("x", 200, false)}},
			},
			wantErr: `plugins "20-b" and "10-a" both tried to set MemLimit of container "x"`,
		},
		{
			name: "conflicting update with IgnoreFailure is dropped, claims and all",
			calls: []call{
				{"10-a", []*api.ContainerUpdate{memUpdate("x", 100, false)}},
				{"20-b", []*api.ContainerUpdate{{ContainerId: "x", IgnoreFailure: true, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
					Cpu: &api.LinuxCPU{Cpus: "3"}, Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 5}},
				}}}}},
				{"30-c", []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "4"}}}}}},
			},
			want: []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 100}}, Cpu: &api.LinuxCPU{Cpus: "4"},
			}}}},
		},
		{
			name: "IgnoreFailure only if every contribution has it",
			calls: []call{
				{"10-a", []*api.ContainerUpdate{memUpdate("x", 1, true)}},
				{"20-b", []*api.ContainerUpdate{{ContainerId: "x", IgnoreFailure: false, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Mems: "0"}}}}}},
				{"30-c", []*api.ContainerUpdate{memUpdate("y", 2, true)}},
			},
			want: []*api.ContainerUpdate{
				{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1}}, Cpu: &api.LinuxCPU{Mems: "0"}}}},
				memUpdate("y", 2, true),
			},
		},
		{
			name:  "pids limits are kept (upstream drops them)",
			calls: []call{{"10-a", []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Pids: &api.LinuxPids{Limit: 99}}}}}}},
			want:  []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Pids: &api.LinuxPids{Limit: 99}}}}},
		},
		{
			name: "device rules in updates are kept (upstream drops them)",
			calls: []call{{"10-a", []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
				Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "rw"}}}}}}}},
			want: []*api.ContainerUpdate{{ContainerId: "x", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
				Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "rw"}}}}}},
		},
		{
			name:  "a plugin updating a container twice: its last value wins",
			calls: []call{{"10-a", []*api.ContainerUpdate{memUpdate("x", 1, false), memUpdate("x", 2, false)}}},
			want:  []*api.ContainerUpdate{memUpdate("x", 2, false)},
		},
		{
			name:    "the container being created may not be updated",
			calls:   []call{{"10-a", []*api.ContainerUpdate{memUpdate("new", 1, true)}}},
			wantErr: `plugin "10-a" asked to update container "new", which is being created`,
		},
		{
			name:    "an update without container ID",
			calls:   []call{{"10-a", []*api.ContainerUpdate{memUpdate("", 1, false)}}},
			wantErr: `plugin "10-a" sent an update without a container ID`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := merge.NewUpdates(merge.NewOwners()).ForCreate("new")
			var err error
			for _, c := range tc.calls {
				if err = u.Apply(c.plugin, c.list); err != nil {
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
			got := u.Others()
			if len(got) != len(tc.want) {
				t.Fatalf("got %d updates, want %d: %v", len(got), len(tc.want), got)
			}
			for i := range got {
				if !proto.Equal(got[i], tc.want[i]) {
					t.Errorf("update %d\n%v\nwant\n%v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestUpdateTarget(t *testing.T) {
	requested := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 100}}, Cpu: &api.LinuxCPU{Cpus: "0-3"}}
	u := merge.NewUpdates(merge.NewOwners()).ForUpdate("t", requested)
	if _, ok := u.Target(); ok {
		t.Fatal("target reported before any plugin changed it")
	}
	if err := u.Apply("10-a", []*api.ContainerUpdate{{ContainerId: "t", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "2"}}}}, memUpdate("o", 5, false)}); err != nil {
		t.Fatal(err)
	}
	if got := u.Resources().GetCpu().GetCpus(); got != "2" {
		t.Errorf("next plugin sees cpus %q, want 2", got)
	}
	tgt, ok := u.Target()
	want := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 100}}, Cpu: &api.LinuxCPU{Cpus: "2"}}
	if !ok || !proto.Equal(tgt.GetLinux().GetResources(), want) {
		t.Errorf("target %v, want full effective resources %v", tgt, want)
	}
	if o := u.Others(); len(o) != 1 || o[0].GetContainerId() != "o" {
		t.Errorf("others %v", o)
	}
	if requested.GetCpu().GetCpus() != "0-3" {
		t.Error("the requested resources were modified")
	}
}

func TestOwnersProto(t *testing.T) {
	o := merge.NewOwners()
	a := merge.NewAdjustment(o, &api.Container{Id: "c"})
	steps := []step{
		{"10-a", &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "1")}, Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/h"}}}}},
		{"20-b", &api.ContainerAdjustment{Env: []*api.KeyValue{env("-X", "")}, Hooks: &api.Hooks{Poststop: []*api.Hook{{Path: "/h"}}}, Linux: &api.LinuxContainerAdjustment{CgroupsPath: "/p"}}},
	}
	for _, s := range steps {
		if err := a.Apply(s.plugin, s.adj); err != nil {
			t.Fatal(err)
		}
	}
	fo := o.Proto().GetOwners()["c"]
	if got := fo.GetCompound()[int32(api.Field_Env)].GetOwners()["X"]; got != "-20-b" {
		t.Errorf("env X owner %q, want -20-b", got)
	}
	if got := fo.GetSimple()[int32(api.Field_OciHooks)]; got != "10-a,20-b" {
		t.Errorf("hooks owners %q", got)
	}
	if got := fo.GetSimple()[int32(api.Field_CgroupsPath)]; got != "20-b" {
		t.Errorf("cgroups path owner %q", got)
	}
	if got, _ := o.Owner("c", api.Field_CgroupsPath, ""); got != "20-b" {
		t.Errorf("Owner = %q", got)
	}
	// Updates of other containers in the same request share the record.
	if err := merge.NewUpdates(o).ForCreate("c").Apply("30-c", []*api.ContainerUpdate{memUpdate("x", 1, false)}); err != nil {
		t.Fatal(err)
	}
	if got := o.Proto().GetOwners()["x"].GetSimple()[int32(api.Field_MemLimit)]; got != "30-c" {
		t.Errorf("memory limit of the updated container x owned by %q, want 30-c", got)
	}
}

// TestReplacedNotDuplicated: a hugepage limit of a size the requested
// resources have, and an rlimit of a type the container has, replace
// those instead of adding a second entry (upstream appends).
func TestReplacedNotDuplicated(t *testing.T) {
	u := merge.NewUpdates(merge.NewOwners()).ForUpdate("t", &api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1}}})
	if err := u.Apply("10-a", []*api.ContainerUpdate{{ContainerId: "t", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
		HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 8}},
	}}}}); err != nil {
		t.Fatal(err)
	}
	tgt, _ := u.Target()
	if h := tgt.GetLinux().GetResources().GetHugepageLimits(); len(h) != 1 || h[0].GetLimit() != 8 {
		t.Errorf("hugepage limits %v, want one 2MB limit of 8", h)
	}

	a := merge.NewAdjustment(merge.NewOwners(), &api.Container{Id: "c", Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1}}})
	if err := a.Apply("10-a", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 9}}}); err != nil {
		t.Fatal(err)
	}
	if rl := a.Container().GetRlimits(); len(rl) != 1 || rl[0].GetHard() != 9 {
		t.Errorf("rlimits as the next plugin sees them: %v", rl)
	}
}
