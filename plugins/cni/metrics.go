package cni

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operations, the values of the op label of nri_cni_errors_total.
const (
	OpSetup    = "setup"    // RunPodSandbox: STATUS and ADD
	OpTeardown = "teardown" // StopPodSandbox: DEL
	OpStatus   = "status"   // PodSandboxStatus: the cached result (and CHECK, verbose)
	OpSync     = "sync"     // Synchronize: garbage collection, once per network that fails it
)

// Metrics are nri-cni's Prometheus metrics, registered on the Registerer
// given to [NewMetrics] (never on a global one):
//
//	nri_cni_setup_duration_seconds     histogram: RunPodSandbox of pods with a network namespace
//	nri_cni_teardown_duration_seconds  histogram: StopPodSandbox of such pods
//	nri_cni_errors_total{op}           counter: failed setup, teardown, status, sync
//
// Every op has its series from the start, at 0. Pass Metrics to [New]
// with [WithMetrics]. The methods of a nil *Metrics do nothing.
type Metrics struct {
	setup, teardown prometheus.Histogram
	errors          *prometheus.CounterVec
}

// NewMetrics creates nri-cni's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("cni: NewMetrics: nil Registerer")
	}
	const ns = "nri_cni"
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100 µs to 13 s
	m := &Metrics{
		setup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "setup_duration_seconds", Buckets: buckets,
			Help: "Time to attach a pod to the CNI network (RunPodSandbox of a pod with a network namespace: STATUS, ADD, and DEL after a failed ADD), failures included.",
		}),
		teardown: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "teardown_duration_seconds", Buckets: buckets,
			Help: "Time to detach a pod from the CNI network (StopPodSandbox of a pod with a network namespace: DEL), failures included.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "errors_total",
			Help: "Failed operations, by op: setup, teardown, status, sync (a network's garbage collection).",
		}, []string{"op"}),
	}
	for _, op := range []string{OpSetup, OpTeardown, OpStatus, OpSync} {
		m.errors.WithLabelValues(op)
	}
	for _, c := range []prometheus.Collector{m.setup, m.teardown, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cni: registering metrics: %w", err)
		}
	}
	return m, nil
}

// failed counts one failed operation op.
func (m *Metrics) failed(op string) {
	if m != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}

// observe records an operation that started at start and ended with *err:
// the latency of setup and teardown, and the failure of any op. It is
// meant to be deferred.
func (m *Metrics) observe(op string, start time.Time, err *error) {
	if m == nil {
		return
	}
	switch op {
	case OpSetup:
		m.setup.Observe(time.Since(start).Seconds())
	case OpTeardown:
		m.teardown.Observe(time.Since(start).Seconds())
	}
	if *err != nil {
		m.failed(op)
	}
}
