// Package adaptation is the runtime side of NRI with the API of
// containerd/nri's pkg/adaptation, implemented on nrinet's runtime library
// (github.com/nrinet/nrinet/runtime): a container runtime written against
// upstream (containerd) builds against it unchanged.
//
// What differs from upstream, on purpose (docs/compat.md has the list):
//
//   - Plugins are called without a lock across requests: requests for
//     different pods run concurrently, and a plugin joining holds up no
//     request (the runtime's SyncFn still runs with whatever lock the
//     runtime takes in it).
//   - Adaptation embeds no mutex: it has no Lock and Unlock methods.
//   - Evictions plugins ask for are returned in CreateContainer's and
//     UpdateContainer's responses.
//   - WASM plugins are not run: one in the plugin directory is logged as
//     an error naming it and skipped.
//   - Pre-installed plugins that exit are launched again, with backoff.
package adaptation
