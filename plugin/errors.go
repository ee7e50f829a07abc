package plugin

import "errors"

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
// does not support nrinet's pod network extension.
var ErrNoNetworkExtension = errors.New("plugin: the runtime does not support the pod network extension")

// ErrShutdown is the reason given to WithOnClose and returned by Wait when
// the runtime asked the plugin to shut down and then closed the
// connection. Run returns nil for it, or, with WithReconnect, connects
// again.
var ErrShutdown = errors.New("plugin: the runtime shut the plugin down")
