package ocispec_test

import (
	"errors"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ocispec"
)

// resolvers returns block I/O and RDT class resolvers knowing class
// "gold" and failing for any other.
func resolvers() []ocispec.Option {
	return []ocispec.Option{
		ocispec.WithBlockIOClassResolver(func(class string) (*rspec.LinuxBlockIO, error) {
			if class != "gold" {
				return nil, errors.New("no such class")
			}
			return &rspec.LinuxBlockIO{Weight: p(uint16(500))}, nil
		}),
		ocispec.WithRDTClassResolver(func(class string) (*rspec.LinuxIntelRdt, error) {
			if class != "gold" {
				return nil, errors.New("no such class")
			}
			return &rspec.LinuxIntelRdt{ClosID: "gold"}, nil
		}),
	}
}

func TestApplyResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func() *rspec.Spec
		r    *api.LinuxResources
		want *rspec.Spec
	}{
		{
			name: "nil resources",
			want: baseSpec(),
		},
		{
			name: "memory limit also sets swap unless given",
			r:    &api.LinuxResources{Memory: &api.LinuxMemory{Limit: oInt64(100), Swap: oInt64(-1), KernelTcp: oInt64(7), UseHierarchy: oBool(true)}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Resources.Memory = &rspec.LinuxMemory{Limit: p(int64(100)), Swap: p(int64(-1)), KernelTCP: p(int64(7)), UseHierarchy: p(true)}
			}),
		},
		{
			name: "present zero values are set",
			r: &api.LinuxResources{Cpu: &api.LinuxCPU{
				Shares: oUint64(0), Quota: oInt64(0), Period: oUint64(0), RealtimeRuntime: oInt64(0), RealtimePeriod: oUint64(0),
			}},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Resources.CPU = &rspec.LinuxCPU{
					Shares: p(uint64(0)), Quota: p(int64(0)), Period: p(uint64(0)), RealtimeRuntime: p(int64(0)), RealtimePeriod: p(uint64(0)), Cpus: "0-3",
				}
			}),
		},
		{
			name: "negative pids limit means unlimited",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) { s.Linux.Resources.Pids = &rspec.LinuxPids{Limit: p(int64(10))} })
			},
			r:    &api.LinuxResources{Pids: &api.LinuxPids{Limit: -1}},
			want: edit(func(s *rspec.Spec) { s.Linux.Resources.Pids = &rspec.LinuxPids{} }),
		},
		{
			name: "block I/O and RDT classes resolved",
			r:    &api.LinuxResources{BlockioClass: oString("gold"), RdtClass: oString("gold")},
			want: edit(func(s *rspec.Spec) {
				s.Linux.Resources.BlockIO = &rspec.LinuxBlockIO{Weight: p(uint16(500))}
				s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "gold"}
			}),
		},
		{
			name: "empty classes clear",
			spec: func() *rspec.Spec {
				return edit(func(s *rspec.Spec) {
					s.Linux.Resources.BlockIO = &rspec.LinuxBlockIO{Weight: p(uint16(10))}
					s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "x"}
				})
			},
			r:    &api.LinuxResources{BlockioClass: oString(""), RdtClass: oString("")},
			want: baseSpec(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			if tc.spec != nil {
				spec = tc.spec()
			}
			if err := ocispec.ApplyResources(spec, tc.r, resolvers()...); err != nil {
				t.Fatalf("ApplyResources: %v", err)
			}
			check(t, tc.want, spec)
		})
	}
}

func TestEmptyClassNeedsNoResolver(t *testing.T) {
	spec := &rspec.Spec{}
	r := &api.LinuxResources{BlockioClass: oString(""), RdtClass: oString("")}
	if err := ocispec.ApplyResources(spec, r); err != nil {
		t.Fatalf("ApplyResources: %v", err)
	}
	check(t, &rspec.Spec{}, spec)
}

func TestResolvedClassIsCopied(t *testing.T) {
	shared := &rspec.LinuxBlockIO{Weight: p(uint16(1))}
	opt := ocispec.WithBlockIOClassResolver(func(string) (*rspec.LinuxBlockIO, error) { return shared, nil })
	spec := &rspec.Spec{}
	if err := ocispec.ApplyResources(spec, &api.LinuxResources{BlockioClass: oString("c")}, opt); err != nil {
		t.Fatalf("ApplyResources: %v", err)
	}
	*shared.Weight = 2
	if got := *spec.Linux.Resources.BlockIO.Weight; got != 1 {
		t.Errorf("spec weight changed with the resolver's value: %d", got)
	}
}

func TestApplyUpdate(t *testing.T) {
	t.Run("nil update", func(t *testing.T) {
		if err := ocispec.ApplyUpdate(baseSpec(), nil); err == nil {
			t.Fatal("ApplyUpdate(nil) succeeded")
		}
	})
	t.Run("update without resources", func(t *testing.T) {
		spec := baseSpec()
		if err := ocispec.ApplyUpdate(spec, &api.ContainerUpdate{ContainerId: "c"}); err != nil {
			t.Fatalf("ApplyUpdate: %v", err)
		}
		check(t, baseSpec(), spec)
	})
	t.Run("update resources", func(t *testing.T) {
		spec := baseSpec()
		u := &api.ContainerUpdate{ContainerId: "c", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Cpu: &api.LinuxCPU{Cpus: "4-7"}, BlockioClass: oString("gold"),
		}}}
		if err := ocispec.ApplyUpdate(spec, u, resolvers()...); err != nil {
			t.Fatalf("ApplyUpdate: %v", err)
		}
		check(t, edit(func(s *rspec.Spec) {
			s.Linux.Resources.CPU.Cpus = "4-7"
			s.Linux.Resources.BlockIO = &rspec.LinuxBlockIO{Weight: p(uint16(500))}
		}), spec)
	})
	t.Run("update error names the update field", func(t *testing.T) {
		spec := baseSpec()
		u := &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{RdtClass: oString("silver")}}}
		err := ocispec.ApplyUpdate(spec, u)
		if !errors.Is(err, ocispec.ErrNoResolver) {
			t.Fatalf("ApplyUpdate error %v, want ErrNoResolver", err)
		}
		const want = `ocispec: linux.resources.rdt_class "silver": RDT class given but no resolver configured (WithRDTClassResolver)`
		if err.Error() != want {
			t.Errorf("error\n got %s\nwant %s", err, want)
		}
		check(t, baseSpec(), spec)
	})
}
