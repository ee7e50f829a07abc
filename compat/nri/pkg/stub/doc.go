// Package stub is containerd/nri's pkg/stub on nrinet: the plugin side of
// NRI with upstream v0.12.5's API (New, the Stub interface, the options and
// one small interface per event), built on nrinet's plugin library
// (github.com/nrinet/nrinet/plugin), so that a plugin written against
// upstream builds and runs unchanged.
//
// # How it works
//
// New wraps the plugin in a handler of nrinet's plugin library that
// implements every event of the protocol and relays each one to the
// plugin's interface for it. The subscription follows upstream's rules:
// the plugin is subscribed to the events it has an interface for
// (RunPodInterface, CreateContainerInterface, ...; Configure, Synchronize
// and Shutdown do not count, and a plugin with none of the event
// interfaces is refused), unless its Configure returns a non-zero mask,
// which must be a subset of those events; a zero mask means all of them.
// The events the runtime sends are therefore exactly the ones the plugin
// would get from upstream's stub.
//
// Before the plugin's Configure runs, the stub records what the runtime
// said: RegistrationTimeout, RequestTimeout and RuntimeNRIVersion give it
// from then on, inside Configure too. A runtime that reports no NRI
// version, "(devel)" or api.UnknownVersion gets one inferred from its
// name and version (api.InferVersionFromRuntime), as upstream does.
// WithFailurePolicy is sent in the answer to Configure.
//
// # Differences from upstream
//
//   - Identity: explicit options win over NRI_PLUGIN_NAME and
//     NRI_PLUGIN_IDX, which win over an executable named "NN-name".
//     Upstream fails WithPluginIdx when NRI_PLUGIN_IDX is set, and lets an
//     executable name override WithPluginName when no index is given.
//     WithPluginName and WithPluginIdx check their value at once.
//   - Run returns ctx.Err() once ctx is cancelled, as upstream, but nil
//     when the runtime shut the plugin down and plugin.ErrStopped after
//     Stop, where upstream returns ttrpc.ErrServerClosed; after another
//     end of the connection it returns the reason.
//   - The on-close callback (WithOnClose) runs on a goroutine of its own,
//     also after Stop; it may call Stop and Wait, and Wait does not wait
//     for it, as upstream's does not.
//   - A runtime that sends no timeouts in Configure leaves the defaults in
//     place; upstream then reports zero.
//   - UpdateContainers is bounded by the request timeout; upstream's has
//     no deadline. Its error for a stub without a connection wraps
//     ErrNoService, also after the connection ended (upstream then
//     returns the closed client's error).
//   - PluginNRIVersion is the version the stub registers with, nrinet's
//     api.Version (the containerd/nri release whose protocol nrinet
//     implements), not the version in the binary's build information.
//   - The timeouts and RuntimeNRIVersion may be read while the runtime
//     configures the plugin (upstream's are unguarded).
//   - Log messages go through pkg/log as upstream's, with those of nrinet's
//     plugin library formatted as "message key=value ...".
package stub
