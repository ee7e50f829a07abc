// Package generate applies a merged NRI container adjustment to a
// container's OCI runtime spec, as upstream NRI's
// pkg/runtime-tools/generate does for containerd and CRI-O, using nrinet's
// ocispec package underneath.
//
// A runtime wraps its spec in an [UnderlyingGenerator] (containerd's
// implements the interface directly on an *rspec.Spec), makes a
// [Generator] with [SpecGenerator] and its options, and calls
// [Generator.Adjust]:
//
//	g := generate.SpecGenerator(specGen,
//		generate.WithBlockIOResolver(resolveBlockIO),
//		generate.WithRdtResolver(resolveRDT),
//		generate.WithResourceChecker(checkResources),
//		generate.WithCDIDeviceInjector(injectCDI),
//	)
//	err := g.Adjust(adjustment)
//
// # What Adjust does
//
// Adjust edits the spec the underlying generator's Spec method returns,
// in place, in three steps:
//
//  1. Checks and resolves: the annotation filter runs, the block I/O and
//     RDT classes are resolved, and the host propagation of the source of
//     every mount asking for "rshared" or "rslave" is checked, as
//     upstream. A failure here leaves the spec unchanged.
//  2. CDI devices are injected by the WithCDIDeviceInjector function, if
//     there is one (without one they are ignored, as upstream), before
//     the rest, so that the adjustment's own devices and mounts win, as
//     upstream.
//  3. The rest of the adjustment is applied by ocispec.ApplyAdjustment,
//     deterministically and all or nothing (see that package for how each
//     field is applied); then the resource checker, if any, sees the
//     resulting Linux resources, if the adjustment had any.
//
// Where ocispec differs from upstream's generator, ocispec's behaviour is
// what you get: for instance an rlimit of a type the container already
// has is replaced instead of appended, every memory value an adjustment
// carries is applied (upstream applies only the limit), and annotations
// or sysctls both removed and set end up set whatever the map order.
// nrinet's docs/compat.md lists the differences.
//
// Classes without a resolver are ignored, as upstream: a runtime that
// cannot apply block I/O or RDT classes leaves the options out. A
// resolver that returns no settings for a class clears them, as upstream.
//
// Only what runtimes call is provided: the per-field Adjust* methods and
// Set*/Add* helpers of upstream's Generator are not.
package generate
