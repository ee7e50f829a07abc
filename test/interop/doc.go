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
//
// refuse_test.go runs the root module's network plugins, nri-podnet and
// nri-cni, built from nrinet's cmd module, against the upstream
// runtime, which lacks nrinet's pod network extension: each must refuse
// it and exit with status 3 and leave a pod run afterwards untouched (it
// needs root, for the pod's network namespace and nri-podnet's bridge).
package interop
