// Package containerd holds no code: its tests run containerd's own unit
// tests of the packages that use NRI, in a containerd source tree prepared
// by hack/containerd.sh, and compare every test's outcome with the baseline
// recorded on stock containerd (testdata/baseline.json).
//
// TestContainerdNRIPackages runs only when NRINET_CONTAINERD_TEST is set
// (`make containerd-test` sets it). It calls hack/containerd.sh, which
// builds containerd against the github.com/containerd/nri that
// NRINET_CONTAINERD_NRI selects (stock, or compat/nri on nrinet), or finds
// it built already. Then it runs `go test -race -mod=vendor` on each
// package listed in suites (containerd_test.go), in the prepared tree. It
// needs root: containerd's podsandbox tests take -test.root and create a
// user and a network namespace under a temporary directory, which they
// remove.
//
// A test that passed in the baseline must pass; one that skipped may skip
// or pass; a test missing from either side is an error. Run the test with
// -update on stock containerd to record a new baseline (a new containerd
// version, or a machine that skips differently).
//
// Built on compat/nri, containerd's go.mod may change only as
// docs/containerd.md says (runtimesuite.AdoptionRules): two modules added, upstream's
// two WASM modules dropped, the two replace lines; no requirement moves.
//
// The helpers that build the runtime, read `go test -json`, judge a run
// and check go.mod are shared with test/crio, in test/internal/runtimesuite,
// with their own tests; TestAddedTests always runs.
//
// docs/dev/containerd-suites.md lists the packages, why each is chosen, and the
// baseline's outcomes.
package containerd
