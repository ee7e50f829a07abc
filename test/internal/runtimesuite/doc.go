// Package runtimesuite runs a container runtime's own unit tests against
// nrinet and judges them against the runtime's stock outcomes: test/containerd
// and test/crio use it, each with its runtime's build script
// (hack/containerd.sh, hack/crio.sh) and its baseline file.
//
// A build script prints the prepared source tree and binaries
// (RunScript); the suites run `go test -json` in that tree (GoTest) and
// ParseRun reads the result. Compare judges a run against the baseline
// recorded on the stock runtime: a test that passed must pass, one that
// skipped may skip or pass, one that failed may fail or pass, the same tests
// must have run, and tests nrinet's patches add must pass. GoModRules
// checks what adopting nrinet changed in the runtime's go.mod.
package runtimesuite
