// Package interop proves that nrinet speaks containerd NRI v0.12.5: its
// tests run nrinet and upstream runtimes and plugins against each other as
// separate processes. The helper commands are built from one source each,
// once on nrinet and once (build tag "upstream") on github.com/containerd/nri,
// so no binary ever links both API packages.
package interop
