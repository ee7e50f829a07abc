// Package crio holds no code: its tests run CRI-O's own unit tests of the
// packages that use NRI, in a CRI-O source tree prepared by hack/crio.sh,
// and compare every test's outcome with the baseline recorded on stock
// CRI-O (testdata/baseline.json), as test/containerd does for containerd.
//
// TestCrioNRIPackages runs only when NRINET_CRIO_TEST is set (`make
// crio-test` sets it). It calls hack/crio.sh, which builds CRI-O against
// the github.com/containerd/nri that NRINET_CRIO_NRI selects (stock, or
// compat/nri on nrinet), or finds it built already. Then it runs `go test`
// on each package in packages (crio_test.go), in the prepared tree, with
// the build tags hack/crio.sh builds with. It needs root, as CRI-O's
// server tests do.
//
// Built on compat/nri, CRI-O's go.mod may change only as docs/crio.md says
// (goModRules): nrinet's modules added, upstream's WASM modules dropped,
// the two replace lines; no requirement moves, not even the go directive.
//
// Run the test with -update on stock CRI-O to record a new baseline.
package crio
