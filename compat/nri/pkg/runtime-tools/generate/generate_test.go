package generate_test

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	nri "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/runtime-tools/generate"
)

// specGen is an UnderlyingGenerator that only has a spec: calling any
// other method panics, which shows Adjust does not.
type specGen struct {
	generate.UnderlyingGenerator
	spec *rspec.Spec
}

func (g *specGen) Spec() *rspec.Spec { return g.spec }

func ptr[T any](v T) *T { return &v }

// baseSpec returns a small container spec.
func baseSpec() *rspec.Spec {
	return &rspec.Spec{
		Process:     &rspec.Process{Args: []string{"/pause"}, Env: []string{"PATH=/bin", "A=1"}},
		Annotations: map[string]string{"keep": "1"},
		Mounts:      []rspec.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: &rspec.Linux{
			Resources: &rspec.LinuxResources{
				HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1}},
				BlockIO:        &rspec.LinuxBlockIO{Weight: ptr(uint16(5))},
			},
			IntelRdt: &rspec.LinuxIntelRdt{ClosID: "old"},
		},
	}
}

// resources returns an adjustment of the Linux resources only.
func resources(r *nri.LinuxResources) *nri.ContainerAdjustment {
	return &nri.ContainerAdjustment{Linux: &nri.LinuxContainerAdjustment{Resources: r}}
}

func TestAdjust(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []generate.GeneratorOption
		adjust *nri.ContainerAdjustment
		want   func(s *rspec.Spec) // edits baseSpec into the expected result
		err    string              // if set, Adjust fails and the spec is unchanged
	}{
		{name: "nil adjustment", adjust: nil, want: func(*rspec.Spec) {}},
		{
			name: "annotations, env, args, mounts",
			adjust: &nri.ContainerAdjustment{
				Annotations: map[string]string{"new": "2", nri.MarkForRemoval("keep"): ""},
				Env:         []*nri.KeyValue{{Key: "A", Value: "2"}, {Key: "B", Value: "3"}},
				Args:        []string{"/bin/sh", "-c", "true"},
				Mounts:      []*nri.Mount{{Destination: "/data", Type: "bind", Source: "/srv", Options: []string{"rbind"}}},
			},
			want: func(s *rspec.Spec) {
				s.Annotations = map[string]string{"new": "2"}
				s.Process.Env = []string{"PATH=/bin", "A=2", "B=3"}
				s.Process.Args = []string{"/bin/sh", "-c", "true"}
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv", Options: []string{"rbind"}})
			},
		},
		{
			name:   "annotation filter",
			opts:   []generate.GeneratorOption{generate.WithAnnotationFilter(dropKey("secret"))},
			adjust: &nri.ContainerAdjustment{Annotations: map[string]string{"secret": "x", "new": "2"}},
			want:   func(s *rspec.Spec) { s.Annotations["new"] = "2" },
		},
		{
			name:   "annotation filter refuses",
			opts:   []generate.GeneratorOption{generate.WithAnnotationFilter(refuse)},
			adjust: &nri.ContainerAdjustment{Annotations: map[string]string{"new": "2"}},
			err:    "refused",
		},
		{
			name:   "block I/O class resolved",
			opts:   []generate.GeneratorOption{generate.WithBlockIOResolver(blockIO)},
			adjust: resources(&nri.LinuxResources{BlockioClass: nri.String("gold")}),
			want:   func(s *rspec.Spec) { s.Linux.Resources.BlockIO = &rspec.LinuxBlockIO{Weight: ptr(uint16(500))} },
		},
		{
			name:   "block I/O class without settings clears",
			opts:   []generate.GeneratorOption{generate.WithBlockIOResolver(blockIO)},
			adjust: resources(&nri.LinuxResources{BlockioClass: nri.String("none")}),
			want:   func(s *rspec.Spec) { s.Linux.Resources.BlockIO = nil },
		},
		{
			name:   "block I/O class without a resolver is ignored",
			adjust: resources(&nri.LinuxResources{BlockioClass: nri.String("gold")}),
			want:   func(*rspec.Spec) {},
		},
		{
			name:   "block I/O resolver fails",
			opts:   []generate.GeneratorOption{generate.WithBlockIOResolver(blockIO)},
			adjust: resources(&nri.LinuxResources{BlockioClass: nri.String("bogus")}),
			err:    `class "bogus"`,
		},
		{
			name:   "RDT class resolved",
			opts:   []generate.GeneratorOption{generate.WithRdtResolver(rdt)},
			adjust: resources(&nri.LinuxResources{RdtClass: nri.String("gold")}),
			want:   func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "gold"} },
		},
		{
			name:   "RDT class without settings clears",
			opts:   []generate.GeneratorOption{generate.WithRdtResolver(rdt)},
			adjust: resources(&nri.LinuxResources{RdtClass: nri.String("none")}),
			want:   func(s *rspec.Spec) { s.Linux.IntelRdt = nil },
		},
		{
			name: "resource checker sees the result",
			opts: []generate.GeneratorOption{generate.WithResourceChecker(func(r *rspec.LinuxResources) error {
				r.HugepageLimits = nil // as containerd does with the hugetlb controller disabled
				return nil
			})},
			adjust: resources(&nri.LinuxResources{Cpu: &nri.LinuxCPU{Cpus: "0-1"}}),
			want: func(s *rspec.Spec) {
				s.Linux.Resources.HugepageLimits = nil
				s.Linux.Resources.CPU = &rspec.LinuxCPU{Cpus: "0-1"}
			},
		},
		{
			name:   "resource checker not called without resources",
			opts:   []generate.GeneratorOption{generate.WithResourceChecker(func(*rspec.LinuxResources) error { return errors.New("called") })},
			adjust: &nri.ContainerAdjustment{Args: []string{"/x"}},
			want:   func(s *rspec.Spec) { s.Process.Args = []string{"/x"} },
		},
		{
			name: "CDI devices first",
			opts: []generate.GeneratorOption{generate.WithCDIDeviceInjector(func(s *rspec.Spec, names []string) error {
				if s.Process.Env[1] != "A=1" {
					return errors.New("the adjustment was applied before the CDI devices")
				}
				s.Process.Env = append(s.Process.Env, "CDI="+strings.Join(names, ","))
				return nil
			})},
			adjust: &nri.ContainerAdjustment{
				CDIDevices: []*nri.CDIDevice{{Name: "vendor.com/gpu=0"}, {Name: "vendor.com/gpu=1"}},
				Env:        []*nri.KeyValue{{Key: "A", Value: "2"}},
			},
			want: func(s *rspec.Spec) {
				s.Process.Env = []string{"PATH=/bin", "A=2", "CDI=vendor.com/gpu=0,vendor.com/gpu=1"}
			},
		},
		{
			name:   "CDI devices without an injector are ignored",
			adjust: &nri.ContainerAdjustment{CDIDevices: []*nri.CDIDevice{{Name: "vendor.com/gpu=0"}}},
			want:   func(*rspec.Spec) {},
		},
		{
			name:   "invalid adjustment",
			adjust: &nri.ContainerAdjustment{Args: []string{"/x"}, Mounts: []*nri.Mount{{Destination: "relative"}}},
			err:    "relative",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, want := baseSpec(), baseSpec()
			err := generate.SpecGenerator(&specGen{spec: spec}, tc.opts...).Adjust(tc.adjust)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Adjust = %v, want an error containing %q", err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatalf("Adjust: %v", err)
				}
				tc.want(want)
			}
			if d := cmp.Diff(want, spec); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
		})
	}
}

func TestAdjustNilSpec(t *testing.T) {
	err := generate.SpecGenerator(&specGen{}).Adjust(&nri.ContainerAdjustment{Args: []string{"/x"}})
	if err == nil {
		t.Fatal("Adjust of a nil spec succeeded")
	}
}

// TestAdjustMountPropagation checks that a shared mount needs a shared
// source on the host: "/" here, whatever its propagation on this machine.
func TestAdjustMountPropagation(t *testing.T) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	rootShared := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 6 && f[4] == "/" {
			rootShared = slices.ContainsFunc(f[6:slices.Index(f, "-")], func(o string) bool { return strings.HasPrefix(o, "shared:") })
		}
	}
	for _, tc := range []struct {
		option string
		fails  bool
	}{
		{"rprivate", false},
		{"rshared", !rootShared},
		{"rshared,rprivate", false}, // the last propagation option counts
	} {
		t.Run(tc.option, func(t *testing.T) {
			spec := baseSpec()
			err := generate.SpecGenerator(&specGen{spec: spec}).Adjust(&nri.ContainerAdjustment{
				Mounts: []*nri.Mount{{Destination: "/host", Type: "bind", Source: "/", Options: append([]string{"rbind"}, strings.Split(tc.option, ",")...)}},
			})
			if (err != nil) != tc.fails {
				t.Fatalf("Adjust = %v, want failure %v (/ shared: %v)", err, tc.fails, rootShared)
			}
			if err != nil && !strings.Contains(err.Error(), `"/host"`) {
				t.Errorf("error %q does not name the mount", err)
			}
		})
	}
}

func dropKey(key string) func(map[string]string) (map[string]string, error) {
	return func(m map[string]string) (map[string]string, error) {
		out := maps.Clone(m)
		delete(out, key)
		return out, nil
	}
}

func refuse(map[string]string) (map[string]string, error) { return nil, errors.New("refused") }

func blockIO(class string) (*rspec.LinuxBlockIO, error) {
	switch class {
	case "gold":
		return &rspec.LinuxBlockIO{Weight: ptr(uint16(500))}, nil
	case "none":
		return nil, nil
	}
	return nil, errors.New("unknown class")
}

func rdt(class string) (*rspec.LinuxIntelRdt, error) {
	if class == "none" {
		return nil, nil
	}
	return &rspec.LinuxIntelRdt{ClosID: class}, nil
}
