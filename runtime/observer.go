package runtime

import (
	"time"

	"github.com/nrinet/nrinet/api"
)

// Observer is told about plugin calls and pod network events, for metrics.
// Its methods are called synchronously on request paths and must be fast
// and safe for concurrent use. See WithObserver.
type Observer interface {
	// PluginCall reports one request to a plugin: the plugin's full name,
	// the method ("RunPodSandbox", "PodSandboxStatus", ...), how long it
	// took and its error (nil on success).
	PluginCall(plugin, method string, took time.Duration, err error)
	// NetworkConflict reports two plugins setting the same part of a
	// pod's network.
	NetworkConflict(plugin, owner string)
	// StatusStale reports a plugin whose part of a pod's network could
	// not be refreshed in a PodSandboxStatus round.
	StatusStale(plugin string)
	// PluginRestarted reports that a pre-installed plugin is launched
	// again after its process exited or could not be started.
	PluginRestarted(plugin string)
}

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) PluginCall(string, string, time.Duration, error) {}
func (nopObserver) NetworkConflict(string, string)                  {}
func (nopObserver) StatusStale(string)                              {}
func (nopObserver) PluginRestarted(string)                          {}

// WithObserver sets the Observer (default: none).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}

// These optional interfaces of an Observer (checked when the Runtime is
// created) report more, for runtimes whose metrics need it (containerd's
// NRI metrics and deprecation recorder).
type (
	// AdjustmentObserver is told what each plugin returned for a
	// CreateContainer, UpdateContainer or StopContainer: its adjustment
	// (nil but for CreateContainer) and how many updates and evictions.
	AdjustmentObserver interface {
		PluginAdjustment(plugin, method string, adjust *api.ContainerAdjustment, updates, evictions int)
	}
	// PluginCountObserver is told how many plugins take part in requests
	// whenever that changes; it is called with the Runtime's lock held
	// and must not call the Runtime.
	PluginCountObserver interface {
		PluginCount(n int)
	}
	// DeprecationObserver is told when a plugin uses a deprecated part of
	// the protocol: "StateChange" when events reach it through the
	// deprecated StateChange RPC because it lacks the dedicated one.
	DeprecationObserver interface {
		PluginDeprecation(plugin, what, details string)
	}
)
