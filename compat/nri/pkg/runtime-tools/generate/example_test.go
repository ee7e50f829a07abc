package generate_test

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	nri "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/runtime-tools/generate"
)

// ociSpec is the smallest UnderlyingGenerator: Adjust only needs Spec.
type ociSpec struct {
	generate.UnderlyingGenerator
	spec *rspec.Spec
}

func (s ociSpec) Spec() *rspec.Spec { return s.spec }

func ExampleGenerator_Adjust() {
	spec := &rspec.Spec{Process: &rspec.Process{Env: []string{"PATH=/bin"}}}
	g := generate.SpecGenerator(ociSpec{spec: spec},
		generate.WithRdtResolver(func(class string) (*rspec.LinuxIntelRdt, error) {
			return &rspec.LinuxIntelRdt{ClosID: class}, nil
		}),
	)
	err := g.Adjust(&nri.ContainerAdjustment{
		Env: []*nri.KeyValue{{Key: "MODE", Value: "fast"}},
		Linux: &nri.LinuxContainerAdjustment{
			Resources: &nri.LinuxResources{Cpu: &nri.LinuxCPU{Cpus: "2-3"}, RdtClass: nri.String("gold")},
		},
	})
	fmt.Println(err, spec.Process.Env, spec.Linux.Resources.CPU.Cpus, spec.Linux.IntelRdt.ClosID)
	// Output: <nil> [PATH=/bin MODE=fast] 2-3 gold
}
