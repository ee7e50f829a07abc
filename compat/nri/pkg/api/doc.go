// Package api is containerd/nri's pkg/api on nrinet: the NRI protocol's
// messages, services and helpers under upstream's names, so that code
// written against github.com/containerd/nri/pkg/api v0.12.5 builds and
// behaves the same with nrinet.
//
// # Where things come from
//
//   - The generated protobuf types and enums, their constants, and the
//     helpers nrinet's api package shares with upstream are nrinet's
//     (github.com/nrinet/nrinet/api), re-exported in aliases_generated.go:
//     types are aliases, so a *PodSandbox here is a *PodSandbox there, and
//     functions are wrappers with upstream's signatures.
//   - What upstream has and nrinet's api lacks, or has with another shape,
//     is written here: the conversions from and to the OCI runtime spec
//     (FromOCIMounts, FromOCILinuxResources, ToOCILinuxSyscalls, ...),
//     CheckPluginName, CheckPluginIndex, ParsePluginName, the event mask
//     ([EventMask], [ParseEventMask], [MustParseEventMask]), the Runtime and
//     Plugin service interfaces with upstream's method sets, and
//     InferVersionFromRuntime.
//
// # Event masks
//
// [EventMask] is a type of this package, not nrinet's: its Set and Clear
// modify the mask in place through a pointer receiver, as upstream's do
// (nrinet's return a new mask, so an upstream-style call on an alias would
// compile and silently do nothing). [ValidEvents] holds the fourteen
// events of upstream NRI (0x3FFF), the events a runtime built on this
// package, such as containerd, delivers. nrinet's pod network extension
// adds event 15, Event_POD_SANDBOX_STATUS; it is not in ValidEvents and
// ParseEventMask does not know its name, so upstream-style plugins never
// subscribe to it by accident. Event_LAST is nrinet's (16), the value the
// shared Event enum names LAST.
//
// # WASM
//
// nrinet does not run WASM plugins. [Plugin], [HostFunctions],
// [PluginPlugin] and [NewPluginPlugin] exist so that code naming them
// builds, but loading a plugin returns an error wrapping
// [ErrWasmNotSupported] that names the plugin. The wazero options
// (WazeroRuntime, ...) and the HostFunctions ttrpc service are not
// provided.
//
// docs/compat.md in the nrinet repository lists every upstream identifier
// this package leaves out, and why.
package api

//go:generate go run ../../internal/apigen
