package ocispec_test

import (
	"fmt"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

// conflicting builds a fresh adjustment in which many annotation, sysctl
// and net device keys are both removed and set, so that any dependence on
// map iteration order would show up.
func conflicting() *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{
		Annotations: map[string]string{},
		Linux: &api.LinuxContainerAdjustment{
			Sysctl:     map[string]string{},
			NetDevices: map[string]*api.LinuxNetDevice{},
		},
	}
	for i := range 16 {
		k := fmt.Sprintf("k%02d", i)
		adj.Annotations["-"+k] = ""
		adj.Annotations[k] = "new-" + k
		adj.Linux.Sysctl["-net.x."+k] = ""
		adj.Linux.Sysctl["net.x."+k] = "new-" + k
		adj.Linux.NetDevices["-eth"+k] = nil
		adj.Linux.NetDevices["eth"+k] = &api.LinuxNetDevice{Name: "net" + k}
	}
	return adj
}

func conflictSpec() *rspec.Spec {
	s := &rspec.Spec{
		Annotations: map[string]string{},
		Linux:       &rspec.Linux{Sysctl: map[string]string{}, NetDevices: map[string]rspec.LinuxNetDevice{}},
	}
	for i := range 16 {
		k := fmt.Sprintf("k%02d", i)
		s.Annotations[k] = "old"
		s.Linux.Sysctl["net.x."+k] = "old"
		s.Linux.NetDevices["eth"+k] = rspec.LinuxNetDevice{Name: "old"}
	}
	return s
}

func TestRemovedAndSetIsDeterministic(t *testing.T) {
	var first *rspec.Spec
	for run := range 2000 {
		spec := conflictSpec()
		if err := ocispec.ApplyAdjustment(spec, conflicting()); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if first == nil {
			first = spec
			for i := range 16 {
				k := fmt.Sprintf("k%02d", i)
				if got := spec.Annotations[k]; got != "new-"+k {
					t.Fatalf("annotation %s = %q, want it set", k, got)
				}
				if got := spec.Linux.Sysctl["net.x."+k]; got != "new-"+k {
					t.Fatalf("sysctl net.x.%s = %q, want it set", k, got)
				}
				if got := spec.Linux.NetDevices["eth"+k].Name; got != "net"+k {
					t.Fatalf("net device eth%s = %q, want it set", k, got)
				}
			}
			continue
		}
		if d := diff(first, spec); d != "" {
			t.Fatalf("run %d differs from run 0 (-first +this):\n%s", run, d)
		}
	}
}
