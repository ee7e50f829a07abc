package generate

import (
	"errors"
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"

	nri "github.com/containerd/nri/pkg/api"
	"github.com/nrinet/nrinet/ocispec"
)

// UnlimitedPidsLimit is the pids limit that means "no limit".
const UnlimitedPidsLimit = -1

// UnderlyingGenerator is the part of the runtime-tools spec generator
// (github.com/opencontainers/runtime-tools/generate.Generator) upstream's
// Generator builds on. Adjust only calls Spec; the other methods are
// promoted through Generator, as upstream.
type UnderlyingGenerator interface {
	AddAnnotation(key, value string)
	AddDevice(device rspec.LinuxDevice)
	AddOrReplaceLinuxNamespace(ns string, path string) error
	AddPostStartHook(postStartHook rspec.Hook)
	AddPostStopHook(postStopHook rspec.Hook)
	AddPreStartHook(preStartHook rspec.Hook)
	AddProcessEnv(name, value string)
	AddLinuxResourcesDevice(allow bool, devType string, major, minor *int64, access string)
	AddLinuxResourcesHugepageLimit(pageSize string, limit uint64)
	AddLinuxResourcesUnified(key, val string)
	AddMount(mnt rspec.Mount)
	AddLinuxSysctl(key, value string)
	ClearMounts()
	ClearProcessEnv()
	Mounts() []rspec.Mount
	RemoveAnnotation(key string)
	RemoveDevice(path string)
	RemoveLinuxNamespace(ns string) error
	RemoveMount(dest string)
	RemoveLinuxSysctl(key string)
	SetProcessArgs(args []string)
	SetLinuxCgroupsPath(path string)
	SetLinuxResourcesCPUCpus(cpus string)
	SetLinuxResourcesCPUMems(mems string)
	SetLinuxResourcesCPUPeriod(period uint64)
	SetLinuxResourcesCPUQuota(quota int64)
	SetLinuxResourcesCPURealtimePeriod(period uint64)
	SetLinuxResourcesCPURealtimeRuntime(time int64)
	SetLinuxResourcesCPUShares(shares uint64)
	SetLinuxResourcesMemoryLimit(limit int64)
	SetLinuxResourcesMemorySwap(swap int64)
	SetLinuxRootPropagation(rp string) error
	SetProcessOOMScoreAdj(adj int)
	Spec() *rspec.Spec
}

// GeneratorOption configures a Generator.
type GeneratorOption func(*Generator)

// Generator applies NRI adjustments to the spec of an UnderlyingGenerator.
// Make it with SpecGenerator.
type Generator struct {
	UnderlyingGenerator
	// Config is the spec adjusted: the underlying generator's Spec() when
	// the Generator was made.
	Config *rspec.Spec

	filterLabels      func(map[string]string) (map[string]string, error)
	filterAnnotations func(map[string]string) (map[string]string, error)
	resolveBlockIO    func(string) (*rspec.LinuxBlockIO, error)
	resolveRdt        func(string) (*rspec.LinuxIntelRdt, error)
	injectCDIDevices  func(*rspec.Spec, []string) error
	checkResources    func(*rspec.LinuxResources) error
}

// SpecGenerator returns a Generator adjusting the spec of gg.
func SpecGenerator(gg UnderlyingGenerator, opts ...GeneratorOption) *Generator {
	g := &Generator{UnderlyingGenerator: gg, Config: gg.Spec()}
	for _, o := range opts {
		o(g)
	}
	return g
}

// WithLabelFilter sets a filter for labels. No adjustment carries labels,
// so it is never called, as upstream.
func WithLabelFilter(fn func(map[string]string) (map[string]string, error)) GeneratorOption {
	return func(g *Generator) { g.filterLabels = fn }
}

// WithAnnotationFilter sets a filter the adjustment's annotations go
// through before they are applied: it returns the annotations to apply,
// or an error to refuse the adjustment.
func WithAnnotationFilter(fn func(map[string]string) (map[string]string, error)) GeneratorOption {
	return func(g *Generator) { g.filterAnnotations = fn }
}

// WithBlockIOResolver sets the function that turns a block I/O class into
// the spec's Linux.Resources.BlockIO. Returning nil settings clears them.
func WithBlockIOResolver(fn func(string) (*rspec.LinuxBlockIO, error)) GeneratorOption {
	return func(g *Generator) { g.resolveBlockIO = fn }
}

// WithRdtResolver sets the function that turns an RDT class into the
// spec's Linux.IntelRdt. Returning nil settings clears them.
func WithRdtResolver(fn func(string) (*rspec.LinuxIntelRdt, error)) GeneratorOption {
	return func(g *Generator) { g.resolveRdt = fn }
}

// WithResourceChecker sets a function that sees, and may change or
// refuse, the spec's Linux resources after an adjustment that has
// resources was applied.
func WithResourceChecker(fn func(*rspec.LinuxResources) error) GeneratorOption {
	return func(g *Generator) { g.checkResources = fn }
}

// WithCDIDeviceInjector sets the function that injects CDI devices, given
// by fully qualified name, into the spec.
func WithCDIDeviceInjector(fn func(*rspec.Spec, []string) error) GeneratorOption {
	return func(g *Generator) { g.injectCDIDevices = fn }
}

// errNoSpec is returned by Adjust when there is no spec to adjust.
var errNoSpec = errors.New("generate: the underlying generator has no spec")

// Adjust applies adjust to the spec, as the package documentation
// describes. A nil adjust changes nothing.
func (g *Generator) Adjust(adjust *nri.ContainerAdjustment) error {
	if adjust == nil {
		return nil
	}
	spec := g.Config
	if spec == nil {
		return errNoSpec
	}
	adj, opts, err := g.prepare(adjust)
	if err != nil {
		return err
	}
	if err := checkMountPropagation(adj.GetMounts()); err != nil {
		return fmt.Errorf("failed to adjust mounts in OCI Spec: %w", err)
	}
	if err := g.injectCDI(spec, adj.GetCDIDevices()); err != nil {
		return err
	}
	if err := ocispec.ApplyAdjustment(spec, adj, opts...); err != nil {
		return fmt.Errorf("failed to adjust OCI Spec: %w", err)
	}
	if g.checkResources != nil && adj.GetLinux().GetResources() != nil {
		var r *rspec.LinuxResources
		if spec.Linux != nil {
			r = spec.Linux.Resources
		}
		if err := g.checkResources(r); err != nil {
			return fmt.Errorf("failed to adjust resources in OCI Spec: %w", err)
		}
	}
	return nil
}

// prepare filters the annotations and resolves the classes of adjust. It
// returns the adjustment to apply (a copy if anything had to change) and
// the ocispec options that supply the resolved classes.
func (g *Generator) prepare(adjust *nri.ContainerAdjustment) (*nri.ContainerAdjustment, []ocispec.Option, error) {
	adj := adjust
	copied := false
	edit := func() *nri.ContainerAdjustment {
		if !copied {
			adj, copied = proto.Clone(adjust).(*nri.ContainerAdjustment), true
		}
		return adj
	}

	if g.filterAnnotations != nil && len(adjust.GetAnnotations()) > 0 {
		filtered, err := g.filterAnnotations(adjust.GetAnnotations())
		if err != nil {
			return nil, nil, fmt.Errorf("failed to adjust annotations in OCI Spec: %w", err)
		}
		edit().Annotations = filtered
	}

	var opts []ocispec.Option
	res := adjust.GetLinux().GetResources()
	if class := res.GetBlockioClass(); class != nil && class.GetValue() != "" {
		settings, keep, err := resolve(g.resolveBlockIO, class.GetValue())
		if err != nil {
			return nil, nil, fmt.Errorf("failed to adjust BlockIO class in OCI Spec: %w", err)
		}
		switch {
		case !keep:
			edit().Linux.Resources.BlockioClass = nil
		case settings == nil:
			edit().Linux.Resources.BlockioClass = nri.String("") // clears
		default:
			opts = append(opts, ocispec.WithBlockIOClassResolver(func(string) (*rspec.LinuxBlockIO, error) { return settings, nil }))
		}
	}
	if class := res.GetRdtClass(); class != nil && class.GetValue() != "" {
		settings, keep, err := resolve(g.resolveRdt, class.GetValue())
		if err != nil {
			return nil, nil, fmt.Errorf("failed to adjust RDT class in OCI Spec: %w", err)
		}
		switch {
		case !keep:
			edit().Linux.Resources.RdtClass = nil
		case settings == nil:
			edit().Linux.Resources.RdtClass = nri.String("") // clears
		default:
			opts = append(opts, ocispec.WithRDTClassResolver(func(string) (*rspec.LinuxIntelRdt, error) { return settings, nil }))
		}
	}
	return adj, opts, nil
}

// resolve resolves class with fn. keep is false if there is no resolver,
// in which case the class is ignored, as upstream.
func resolve[T any](fn func(string) (*T, error), class string) (settings *T, keep bool, err error) {
	if fn == nil {
		return nil, false, nil
	}
	settings, err = fn(class)
	if err != nil {
		return nil, false, fmt.Errorf("class %q: %w", class, err)
	}
	return settings, true, nil
}

// injectCDI injects the named CDI devices, if there are any and an
// injector.
func (g *Generator) injectCDI(spec *rspec.Spec, devices []*nri.CDIDevice) error {
	if len(devices) == 0 || g.injectCDIDevices == nil {
		return nil
	}
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = d.GetName()
	}
	if err := g.injectCDIDevices(spec, names); err != nil {
		return fmt.Errorf("failed to inject CDI devices %q: %w", names, err)
	}
	return nil
}
