// Package nri is containerd/nri's root package: the client of NRI 0.1,
// whose plugins are executables run once per event with a JSON request on
// their standard input (types/v1). containerd still calls it for pod
// sandboxes; with no /etc/nri/conf.json it does nothing.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
package nri
