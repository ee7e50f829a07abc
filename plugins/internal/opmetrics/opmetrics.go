// Package opmetrics are the operation metrics every nrinet network plugin
// has, written once: <namespace>_setup_duration_seconds and
// <namespace>_teardown_duration_seconds (histograms of RunPodSandbox and
// StopPodSandbox of pods with a network namespace, failures included) and
// <namespace>_errors_total{op} (failed setup, teardown, status, sync, each
// series there from the start, at 0). nri-podnet and nri-cni use it with
// their own namespace and help texts.
package opmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The operations, the values of the op label.
const (
	Setup    = "setup"
	Teardown = "teardown"
	Status   = "status"
	Sync     = "sync"
)

// Help are the help texts of the three metrics.
type Help struct {
	Setup, Teardown, Errors string
}

// Ops are the operation metrics. The methods of a nil *Ops do nothing.
type Ops struct {
	setup, teardown prometheus.Histogram
	errors          *prometheus.CounterVec
}

// New returns the operation metrics of namespace, not registered yet
// (Collectors).
func New(namespace string, help Help) *Ops {
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100 µs to 13 s
	o := &Ops{
		setup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "setup_duration_seconds", Buckets: buckets, Help: help.Setup,
		}),
		teardown: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "teardown_duration_seconds", Buckets: buckets, Help: help.Teardown,
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "errors_total", Help: help.Errors,
		}, []string{"op"}),
	}
	for _, op := range []string{Setup, Teardown, Status, Sync} {
		o.errors.WithLabelValues(op)
	}
	return o
}

// Collectors are the metrics to register.
func (o *Ops) Collectors() []prometheus.Collector {
	return []prometheus.Collector{o.setup, o.teardown, o.errors}
}

// Failed counts one failed operation op.
func (o *Ops) Failed(op string) {
	if o != nil {
		o.errors.WithLabelValues(op).Inc()
	}
}

// Observe records an operation that started at start and ended with *err:
// the latency of setup and teardown, and the failure of any op. It is
// meant to be deferred.
func (o *Ops) Observe(op string, start time.Time, err *error) {
	if o == nil {
		return
	}
	switch op {
	case Setup:
		o.setup.Observe(time.Since(start).Seconds())
	case Teardown:
		o.teardown.Observe(time.Since(start).Seconds())
	}
	if *err != nil {
		o.Failed(op)
	}
}
