// Package v1 holds the types of NRI 0.1, the original NRI: plugins were
// executables the runtime ran once per event with a JSON [Request] on
// stdin, configured by a [ConfigList] (normally /etc/nri/conf.json), and
// answered with a JSON [Result]. containerd still passes [Create] and
// [Delete] to the NRI 0.1 client (package nri) when it creates and
// removes a pod sandbox.
//
// The JSON encoding of every type is upstream's (containerd/nri v0.12.5,
// types/v1), so that existing NRI 0.1 plugins and configuration files keep
// working.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
package v1
