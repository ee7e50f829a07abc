// Package critest runs cri-tools' CRI validation suite (critest) against a
// runtime the end-to-end suites started, reads the outcome of each spec
// from its Ginkgo JSON report, judges a run against a reference run (every
// spec that passed on the stock runtime must pass on nrinet) and renders
// the per-runtime results as a Markdown table. The containerd and the
// CRI-O suites (test/containerd-e2e, test/crio-e2e) both run it with
// Suite.
package critest
