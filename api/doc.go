// Package api defines the messages and services of the NRI (Node Resource
// Interface) protocol, spoken between a container runtime such as
// containerd or CRI-O and its NRI plugins, plus a few helpers around them.
//
// The schema lives in api.proto; api.pb.go (messages) and api_ttrpc.pb.go
// (ttrpc services) are generated from it with `go generate ./api`. Its
// protobuf package is nri.pkg.api.v1alpha1 and every service, method,
// message, field number, field type and enum value matches containerd/nri
// v0.12.5, so peers built with this package and with upstream NRI
// understand each other on the wire. The Go API is not the upstream one:
// only the generated names coincide, the helpers are our own.
//
// Two ttrpc services make up the protocol:
//
//   - Runtime (RuntimeService, RegisterRuntimeService, NewRuntimeClient) is
//     served by the runtime. A plugin calls RegisterPlugin once connected
//     and may later push container updates with UpdateContainers.
//   - Plugin (PluginService, RegisterPluginService, NewPluginClient) is
//     served by every plugin. The runtime calls Configure, then
//     Synchronize, then one method per subscribed lifecycle event.
//
// # Events
//
// Each lifecycle notification is an [Event]. In its ConfigureResponse a
// plugin subscribes to events with a bitmask, represented here by
// [EventMask]: event e is selected by bit 1<<(e-1), so the fourteen real
// events occupy [ValidEvents] (0x3FFF). [ParseEventMask] reads a
// subscription from a comma separated list of names, and [Event.Method]
// gives the Plugin service method that delivers an event ([Event.PrettyName]
// the same, or "unknown(N)", as upstream).
//
// # Plugin identity
//
// A plugin is identified by a name and a two-digit index; plugins are
// invoked in ascending index order and the pair is written "NN-name".
// [ValidatePluginName] and [ValidatePluginIndex] check the two parts,
// [FullPluginName] joins them, and [ParsePluginFileName] splits the file
// name of a pre-installed plugin executable (found in [DefaultPluginPath]).
// Externally started plugins connect to [DefaultSocketPath]; plugins
// launched by the runtime learn their identity and connection from the
// [PluginNameEnv], [PluginIdxEnv] and [PluginSocketEnv] environment
// variables.
package api
