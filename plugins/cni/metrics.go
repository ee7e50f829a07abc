package cni

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/plugins/internal/opmetrics"
)

// Operations, the values of the op label of nrinet_cni_errors_total.
const (
	OpSetup    = opmetrics.Setup    // RunPodSandbox: STATUS and ADD
	OpTeardown = opmetrics.Teardown // StopPodSandbox: DEL
	OpStatus   = opmetrics.Status   // PodSandboxStatus: the cached result (and CHECK, verbose)
	OpSync     = opmetrics.Sync     // Synchronize: garbage collection, once per network that fails it
)

// Metrics are nri-cni's Prometheus metrics, registered on the Registerer
// given to [NewMetrics] (never on a global one):
//
//	nrinet_cni_setup_duration_seconds     histogram: RunPodSandbox of pods with a network namespace
//	nrinet_cni_teardown_duration_seconds  histogram: StopPodSandbox of such pods
//	nrinet_cni_errors_total{op}           counter: failed setup, teardown, status, sync
//
// Every op has its series from the start, at 0. Pass Metrics to [New]
// with [WithMetrics]. The methods of a nil *Metrics do nothing.
type Metrics struct {
	ops *opmetrics.Ops
}

// NewMetrics creates nri-cni's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("cni: NewMetrics: nil Registerer")
	}
	m := &Metrics{ops: opmetrics.New("nrinet_cni", opmetrics.Help{
		Setup:    "Time to attach a pod to the CNI network (RunPodSandbox of a pod with a network namespace: STATUS, ADD, and DEL after a failed ADD), failures included.",
		Teardown: "Time to detach a pod from the CNI network (StopPodSandbox of a pod with a network namespace: DEL), failures included.",
		Errors:   "Failed operations, by op: setup, teardown, status, sync (a network's garbage collection).",
	})}
	for _, c := range m.ops.Collectors() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cni: registering metrics: %w", err)
		}
	}
	return m, nil
}

// failed counts one failed operation op.
func (m *Metrics) failed(op string) {
	if m != nil {
		m.ops.Failed(op)
	}
}

// observe records an operation that started at start and ended with *err
// (opmetrics.Ops.Observe). It is meant to be deferred.
func (m *Metrics) observe(op string, start time.Time, err *error) {
	if m != nil {
		m.ops.Observe(op, start, err)
	}
}
