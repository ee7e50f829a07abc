package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// NRI events whose hook latency is measured (label "event").
const (
	eventRun    = "RunPodSandbox"
	eventStop   = "StopPodSandbox"
	eventRemove = "RemovePodSandbox"
	eventStatus = "PodSandboxStatus"
)

// metricsNamespace is the prefix of nrinetd's own metrics
// (nrinet_nrinetd_<subsystem>_<name>; docs/metrics.md lists them).
const metricsNamespace = "nrinet_nrinetd"

// metrics are the server's Prometheus collectors. A nil *metrics records
// nothing.
type metrics struct {
	hookDuration *prometheus.HistogramVec
	hookErrors   *prometheus.CounterVec
	requests     *prometheus.CounterVec
	stale        *prometheus.CounterVec
}

// newMetrics registers the collectors on reg; the state collector reads
// the server when scraped.
func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	m := &metrics{
		hookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: "nri", Name: "hook_duration_seconds",
			Help:    "Time the NRI plugins took for a pod sandbox event, all plugins together.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"event"}),
		hookErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "nri", Name: "hook_errors_total",
			Help: "NRI pod sandbox events that failed.",
		}, []string{"event"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "cri", Name: "requests_total",
			Help: "CRI requests served, by method and gRPC code.",
		}, []string{"method", "code"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Subsystem: "nri", Name: "stale_network_parts_total",
			Help: "Pod sandbox status answers in which a plugin's part of the network was stale (the plugin failed, was slow or gone).",
		}, []string{"plugin"}),
	}
	for _, ev := range []string{eventRun, eventStop, eventRemove, eventStatus} {
		// Every event's series from the start, at 0.
		m.hookDuration.WithLabelValues(ev)
		m.hookErrors.WithLabelValues(ev)
	}
	for _, c := range []prometheus.Collector{m.hookDuration, m.hookErrors, m.requests, m.stale, stateCollector{s}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cri: registering metrics: %w", err)
		}
	}
	return m, nil
}

// observeHook records one NRI event that started at start.
func (m *metrics) observeHook(event string, start time.Time, err error) {
	if m == nil {
		return
	}
	m.hookDuration.WithLabelValues(event).Observe(time.Since(start).Seconds())
	if err != nil {
		m.hookErrors.WithLabelValues(event).Inc()
	}
}

// observeStale counts the plugins whose part of a status was stale.
func (m *metrics) observeStale(stale map[string]string) {
	if m == nil {
		return
	}
	for plugin := range stale {
		m.stale.WithLabelValues(plugin).Inc()
	}
}

// interceptor counts CRI requests by method and code.
func (m *metrics) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rsp, err := handler(ctx, req)
	if m != nil {
		m.requests.WithLabelValues(shortMethod(info.FullMethod), status.Code(err).String()).Inc()
	}
	return rsp, err
}

// shortMethod turns "/runtime.v1.RuntimeService/Version" into "Version".
func shortMethod(full string) string {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '/' {
			return full[i+1:]
		}
	}
	return full
}

// stateCollector reports, when scraped, the sandboxes by state, whether
// the network is ready, and the connected NRI plugins.
type stateCollector struct{ s *Server }

var (
	descSandboxes = prometheus.NewDesc(metricsNamespace+"_pod_sandboxes", "Pod sandboxes by state.", []string{"state"}, nil)
	descReady     = prometheus.NewDesc(metricsNamespace+"_network_ready", "1 if every required network plugin is connected, else 0.", nil, nil)
	descPlugin    = prometheus.NewDesc(metricsNamespace+"_plugin_connected", "NRI plugins that have joined (always 1), by plugin (index-name) and kind (external: connected to the socket; launched: pre-installed, started by nrinetd).", []string{"plugin", "kind"}, nil)
	descStoreErr  = prometheus.NewDesc(metricsNamespace+"_store_unreadable", "1 if the sandbox store could not be read during this scrape (the pod sandbox counts then read 0), else 0.", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSandboxes
	ch <- descReady
	ch <- descPlugin
	ch <- descStoreErr
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[state]int{stateReady: 0, stateNotReady: 0}
	sbs, err := c.s.store.list()
	for _, sb := range sbs {
		counts[sb.State]++
	}
	failed := 0.0
	if err != nil && !errors.Is(err, ErrClosed) {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(descStoreErr, prometheus.GaugeValue, failed)
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(descSandboxes, prometheus.GaugeValue, float64(n), string(st))
	}
	ready, _ := c.s.rt.NetworkReady()
	v := 0.0
	if ready {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, v)
	for _, p := range c.s.rt.Plugins() {
		ch <- prometheus.MustNewConstMetric(descPlugin, prometheus.GaugeValue, 1, p.Name, p.Kind)
	}
}
