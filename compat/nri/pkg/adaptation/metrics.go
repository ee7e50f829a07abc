package adaptation

import (
	"context"
	"fmt"
	"time"

	"github.com/nrinet/nrinet/runtime"
)

// Metrics is told about plugin activity. Its methods are called
// concurrently and must be safe for it.
type Metrics interface {
	// RecordPluginInvocation records a call of a plugin for operation
	// (the request's name, e.g. "CreateContainer") and its error.
	RecordPluginInvocation(pluginName, operation string, err error)
	// RecordPluginLatency records how long the call took.
	RecordPluginLatency(pluginName, operation string, latency time.Duration)
	// RecordPluginAdjustments records what a plugin returned for a
	// container request.
	RecordPluginAdjustments(pluginName, operation string, adjust *ContainerAdjustment, updates, evicts int)
	// UpdatePluginCount sets the number of plugins taking part.
	UpdatePluginCount(count int)
}

type noopMetrics struct{}

func (noopMetrics) RecordPluginInvocation(string, string, error)                           {}
func (noopMetrics) RecordPluginLatency(string, string, time.Duration)                      {}
func (noopMetrics) RecordPluginAdjustments(string, string, *ContainerAdjustment, int, int) {}
func (noopMetrics) UpdatePluginCount(int)                                                  {}

// DeprecationRecorder records plugins' use of deprecated parts of NRI.
type DeprecationRecorder interface {
	// PluginWarning records a warning d for plugin, with details.
	PluginWarning(ctx context.Context, d Deprecation, plugin, details string)
}

// Deprecation is a deprecated part of NRI a plugin may use.
type Deprecation int

const (
	// DeprecatedStateChange: the plugin lacks a per-event RPC and gets
	// the event through the deprecated StateChange.
	DeprecatedStateChange Deprecation = iota + 1
)

func (d Deprecation) String() string {
	switch d {
	case DeprecatedStateChange:
		return "deprecated StateChange"
	}
	return fmt.Sprintf("unknown deprecation (%d)", d)
}

// observer turns what nrinet's runtime observes into Metrics and
// DeprecationRecorder calls.
type observer struct {
	metrics     Metrics
	deprecation DeprecationRecorder
}

var (
	_ runtime.Observer            = (*observer)(nil)
	_ runtime.AdjustmentObserver  = (*observer)(nil)
	_ runtime.PluginCountObserver = (*observer)(nil)
	_ runtime.DeprecationObserver = (*observer)(nil)
)

func (o *observer) PluginCall(plugin, method string, took time.Duration, err error) {
	o.metrics.RecordPluginLatency(plugin, method, took)
	o.metrics.RecordPluginInvocation(plugin, method, err)
}

func (o *observer) NetworkConflict(string, string) {}
func (o *observer) StatusStale(string)             {}
func (o *observer) PluginRestarted(string)         {}

func (o *observer) PluginAdjustment(plugin, method string, adjust *ContainerAdjustment, updates, evictions int) {
	o.metrics.RecordPluginAdjustments(plugin, method, adjust, updates, evictions)
}

func (o *observer) PluginCount(n int) { o.metrics.UpdatePluginCount(n) }

func (o *observer) PluginDeprecation(plugin, what, details string) {
	if o.deprecation != nil && what == "StateChange" {
		o.deprecation.PluginWarning(context.TODO(), DeprecatedStateChange, plugin, details)
	}
}
