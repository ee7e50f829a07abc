package merge_test

import (
	"fmt"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// BenchmarkAdjustment merges what three plugins return for one container:
// each an env variable, an annotation, a mount and a resource setting.
func BenchmarkAdjustment(b *testing.B) {
	ctr := &api.Container{
		Id: "c1", Env: []string{"PATH=/bin", "HOME=/root"}, Annotations: map[string]string{"a": "b"},
		Mounts: []*api.Mount{{Destination: "/etc/hosts", Source: "/x", Type: "bind"}},
		Linux:  &api.LinuxContainer{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}}},
	}
	res := []*api.LinuxResources{
		{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2 << 30}}},
		{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}}},
		{Cpu: &api.LinuxCPU{Cpus: "0-1"}},
	}
	var adjs []*api.ContainerAdjustment
	for i := range 3 {
		adjs = append(adjs, &api.ContainerAdjustment{
			Annotations: map[string]string{fmt.Sprintf("p%d", i): "yes"},
			Env:         []*api.KeyValue{{Key: fmt.Sprintf("P%d", i), Value: "1"}},
			Mounts:      []*api.Mount{{Destination: fmt.Sprintf("/p%d", i), Source: "/src", Type: "bind"}},
			Linux:       &api.LinuxContainerAdjustment{Resources: res[i]},
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		a := merge.NewAdjustment(merge.NewOwners(), ctr)
		for i, adj := range adjs {
			if err := a.Apply(fmt.Sprintf("%d0-p", i+1), adj); err != nil {
				b.Fatal(err)
			}
		}
	}
}
