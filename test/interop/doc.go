// Package interop proves that nrinet speaks containerd NRI v0.12.5: its
// tests run nrinet and upstream runtimes and plugins against each other as
// separate processes. The helper commands are built from one source each,
// once on nrinet and once (build tag "upstream") on github.com/containerd/nri,
// so no binary ever links both API packages.
//
// Besides whole plugin sessions, the tests compare, field by field, what
// the two runtimes merge from scripted plugins' adjustments and updates
// (adjust_test.go), check the deliberate differences, and check that an
// nrinet runtime delivers the evictions plugins ask for (evict_test.go).
package interop
