// Command apigen writes pkg/api/aliases_generated.go: every exported
// identifier of containerd/nri v0.12.5's pkg/api that nrinet's api package
// has under the same name, and that pkg/api does not define by hand,
// re-exported from nrinet's api: types as aliases, constants and variables
// as the same values, functions as wrappers with the same signature.
//
// It runs from pkg/api (go generate ./pkg/api) and needs containerd/nri
// v0.12.5 in the module cache, which it downloads through the Go module
// proxy if it is missing. Its test checks that the file is current.
package main
