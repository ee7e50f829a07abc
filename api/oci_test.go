package api_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

func TestLinuxResourcesToOCI(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	yes := true
	for _, tc := range []struct {
		name string
		in   *api.LinuxResources
		want *rspec.LinuxResources
	}{
		{name: "nil", in: nil, want: nil},
		{name: "empty", in: &api.LinuxResources{}, want: &rspec.LinuxResources{CPU: &rspec.LinuxCPU{}, Memory: &rspec.LinuxMemory{}}},
		{
			name: "every field",
			in: &api.LinuxResources{
				Memory: &api.LinuxMemory{
					Limit: api.Int64(1 << 30), Reservation: api.Int64(1 << 29), Swap: api.Int64(2 << 30),
					Kernel: api.Int64(1), KernelTcp: api.Int64(2), Swappiness: api.UInt64(60),
					DisableOomKiller: api.Bool(true), UseHierarchy: api.Bool(true),
				},
				Cpu: &api.LinuxCPU{
					Shares: api.UInt64(512), Quota: api.Int64(50000), Period: api.UInt64(100000),
					RealtimeRuntime: api.Int64(10), RealtimePeriod: api.UInt64(20), Cpus: "0-1", Mems: "0",
				},
				HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}},
				Unified:        map[string]string{"memory.high": "max"},
				Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: api.Int64(1), Minor: api.Int64(3), Access: "rwm"}, {Type: "a"}},
				Pids:           &api.LinuxPids{Limit: 100},
			},
			want: &rspec.LinuxResources{
				Memory: &rspec.LinuxMemory{
					Limit: i64(1 << 30), Reservation: i64(1 << 29), Swap: i64(2 << 30),
					Kernel: i64(1), KernelTCP: i64(2), Swappiness: u64(60),
					DisableOOMKiller: &yes, UseHierarchy: &yes,
				},
				CPU: &rspec.LinuxCPU{
					Shares: u64(512), Quota: i64(50000), Period: u64(100000),
					RealtimeRuntime: i64(10), RealtimePeriod: u64(20), Cpus: "0-1", Mems: "0",
				},
				HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 4 << 20}},
				Unified:        map[string]string{"memory.high": "max"},
				Devices:        []rspec.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: i64(1), Minor: i64(3), Access: "rwm"}, {Type: "a"}},
				Pids:           &rspec.LinuxPids{Limit: i64(100)},
			},
		},
		{
			name: "unlimited pids",
			in:   &api.LinuxResources{Pids: &api.LinuxPids{Limit: api.UnlimitedPidsLimit}},
			want: &rspec.LinuxResources{CPU: &rspec.LinuxCPU{}, Memory: &rspec.LinuxMemory{}, Pids: &rspec.LinuxPids{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.ToOCI()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ToOCI (-want +got):\n%s", diff)
			}
			if got != nil && got.Unified != nil {
				got.Unified["changed"] = "yes"
				if _, shared := tc.in.Unified["changed"]; shared {
					t.Error("ToOCI shares the Unified map with its input")
				}
			}
		})
	}
}
