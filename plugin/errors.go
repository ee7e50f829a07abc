package plugin

import (
	"errors"
	"fmt"
)

// ErrStopped is the reason given to WithOnClose and returned by Wait and
// Run after Stop.
var ErrStopped = errors.New("plugin: stopped")

// ErrNotStarted is returned by calls that need a connection when the stub
// has none.
var ErrNotStarted = errors.New("plugin: not connected to a runtime")

// ErrNoHandlers is returned by New for a plugin that implements no event
// handler interface.
var ErrNoHandlers = errors.New("plugin: implements no event handler")

// ErrNoNetworkExtension is returned for pod network calls to a runtime that
// does not support nrinet's pod network extension, and matched by the
// [*NoNetworkExtensionError] of a stub built with
// [WithRequiredNetworkExtension] that refused such a runtime.
var ErrNoNetworkExtension = errors.New("plugin: the runtime does not support the pod network extension")

// NoNetworkExtensionError is what Start and Run of a stub built with
// [WithRequiredNetworkExtension] return when the runtime's Configure did
// not advertise nrinet's pod network extension: the plugin refused
// Configure, so the runtime never took it in. It names the plugin and the
// runtime, says what is missing and what to do, and matches
// [ErrNoNetworkExtension] with [errors.Is].
type NoNetworkExtensionError struct {
	// Plugin is the plugin's full name, "NN-name".
	Plugin string
	// Runtime and RuntimeVersion are what the runtime called itself in
	// Configure.
	Runtime, RuntimeVersion string
}

func (e *NoNetworkExtensionError) Error() string {
	return fmt.Sprintf("plugin %q refuses to join runtime %q version %q: "+
		"it needs nrinet's pod network extension, which the runtime does not advertise in Configure, "+
		"so the pod networks the plugin sets up would be dropped; "+
		"run it with a runtime built on nrinet (nrinetd, or containerd on nrinet with network_mode = \"nri\"), and on this runtime keep using CNI",
		e.Plugin, e.Runtime, e.RuntimeVersion)
}

// Is reports whether target is [ErrNoNetworkExtension].
func (e *NoNetworkExtensionError) Is(target error) bool { return target == ErrNoNetworkExtension }

// ErrShutdown is the reason given to WithOnClose and returned by Wait when
// the runtime asked the plugin to shut down and then closed the
// connection. Run returns nil for it, or, with WithReconnect, connects
// again.
var ErrShutdown = errors.New("plugin: the runtime shut the plugin down")
