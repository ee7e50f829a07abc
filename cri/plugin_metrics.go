package cri

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/runtime"
)

// PluginMetrics is a runtime.Observer that exports per-plugin Prometheus
// metrics: every call's latency by plugin and method, failed calls, and
// network conflicts. Pass it to runtime.New with runtime.WithObserver.
type PluginMetrics struct {
	calls     *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	restarts  *prometheus.CounterVec
}

var _ runtime.Observer = (*PluginMetrics)(nil)

// NewPluginMetrics registers the per-plugin collectors on reg.
func NewPluginMetrics(reg prometheus.Registerer) (*PluginMetrics, error) {
	m := &PluginMetrics{
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: "plugin", Name: "call_duration_seconds",
			Help:    "Latency of each NRI request to a plugin, by plugin and method.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"plugin", "method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "plugin", Name: "call_errors_total",
			Help: "NRI requests to a plugin that failed (an error, a timeout or a lost connection).",
		}, []string{"plugin", "method"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "plugin", Name: "network_conflicts_total",
			Help: "Pods refused because a plugin set a part of the pod network another plugin owned.",
		}, []string{"plugin", "owner"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "plugin", Name: "restarts_total",
			Help: "Launches of a pre-installed plugin after its process exited or could not be started.",
		}, []string{"plugin"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.errors, m.conflicts, m.restarts} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cri: registering plugin metrics: %w", err)
		}
	}
	return m, nil
}

// PluginCall records one request to a plugin.
func (m *PluginMetrics) PluginCall(plugin, method string, took time.Duration, err error) {
	m.calls.WithLabelValues(plugin, method).Observe(took.Seconds())
	if err != nil {
		m.errors.WithLabelValues(plugin, method).Inc()
	}
}

// NetworkConflict records a conflict between two plugins.
func (m *PluginMetrics) NetworkConflict(plugin, owner string) {
	m.conflicts.WithLabelValues(plugin, owner).Inc()
}

// StatusStale is counted by the server's own stale metric, per status
// answer; nothing to do here.
func (m *PluginMetrics) StatusStale(string) {}

// PluginRestarted counts a relaunch of a pre-installed plugin.
func (m *PluginMetrics) PluginRestarted(plugin string) {
	m.restarts.WithLabelValues(plugin).Inc()
}
