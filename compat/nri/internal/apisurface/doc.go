// Package apisurface describes the exported API of Go packages for the
// generator and the tests of this module: [Upstream] parses the source of
// containerd/nri v0.12.5 from the module cache with go/parser, and [Load]
// reads the compiled export data of any package for go/types, so that
// upstream's surface can be compared with ours without
// golang.org/x/tools.
package apisurface
