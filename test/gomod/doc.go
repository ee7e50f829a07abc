// Package gomod checks the promise of docs/dev/modules.md: the modules a
// container runtime links when it adopts nrinet (the root module, with
// the NRI libraries, and compat/nri, the drop-in github.com/containerd/nri)
// require no module at a version newer than the oldest runtime nrinet
// supports requires it, and no Go newer than that runtime's go directive.
// Go's minimal version selection would otherwise raise the runtime's
// requirements to nrinet's when it adds the two replace lines.
//
// The runtimes' go.mod files are read through the Go module proxy (go list
// -m, which fetches a go.mod without the module's source). The build of
// each runtime on compat/nri checks the same promise end to end, with go
// mod tidy (make containerd-test for containerd).
package gomod
