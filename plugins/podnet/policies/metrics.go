package policies

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// Metrics are the policy engine's Prometheus metrics, registered on the
// Registerer given to [NewMetrics]:
//
//	nrinet_podnet_netpol_policies            gauge: NetworkPolicies in the cluster at the last apply
//	nrinet_podnet_netpol_isolated_pods       gauge: this node's pods some policy isolates
//	nrinet_podnet_netpol_rules               gauge: rules of the table
//	nrinet_podnet_netpol_sets                gauge: sets and verdict maps of the table
//	nrinet_podnet_netpol_set_elements        gauge: their elements
//	nrinet_podnet_netpol_sync_duration_seconds  histogram: compile and apply, failures included
//	nrinet_podnet_netpol_sync_errors_total   counter: failed compiles and writes, and syncs with policies it could not read
//	nrinet_podnet_netpol_writes_total{kind}  counter: syncs by what they wrote: "full" (the whole table), "changes" (what differed), "none"
//	nrinet_podnet_netpol_last_write_objects  gauge: the size of the last transaction (rules, elements, chains and sets it wrote or deleted)
//	nrinet_podnet_netpol_oversized_policy_elements{policy}  gauge: policies too big to enforce (they allow nothing), with the set elements and rules they would need
//	nrinet_podnet_netpol_allowed_packets_total{policy,direction}  counter: packets opening a connection a policy's rules allowed (read from the kernel)
//	nrinet_podnet_netpol_denied_packets_total{pod,direction}  counter: packets opening a connection no policy allowed, per isolated pod (read from the kernel)
//	nrinet_podnet_netpol_denied_unlogged_packets_total  counter: with logDenied, denied packets over the log's rate, not logged
//	nrinet_podnet_netpol_denied_logged_packets_total    counter: with logDenied, denied packets logged
//	nrinet_podnet_netpol_deny_log_overruns_total        counter: with logDenied, times the log's socket was full and messages were dropped
//
// The counters of the table are read at each scrape when the
// Controller's Enforcer is a [CounterReader]: a policy's and a pod's
// series exist while the table holds their rules, so their number
// follows the policies isolating this node's pods and those pods.
// Every kind of writes_total has its series from the start, at 0. The
// methods of a nil *Metrics do nothing.
type Metrics struct {
	policies, pods, rules, sets, elements prometheus.Gauge
	written                               prometheus.Gauge
	duration                              prometheus.Histogram
	errors                                prometheus.Counter
	writes                                *prometheus.CounterVec
	oversized                             *prometheus.GaugeVec
	counters                              *counterCollector // the table's counters (counters.go)
}

// The kinds of writes_total.
const (
	writeFull    = "full"
	writeChanges = "changes"
	writeNone    = "none"
)

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("policies: NewMetrics: nil Registerer")
	}
	const ns, sub = "nrinet_podnet", "netpol"
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	m := &Metrics{
		policies: g("policies", "NetworkPolicies in the cluster at the last apply."),
		pods:     g("isolated_pods", "This node's pods that some NetworkPolicy isolates."),
		rules:    g("rules", "Rules of the NetworkPolicy table."),
		sets:     g("sets", "Sets and verdict maps of the NetworkPolicy table."),
		elements: g("set_elements", "Elements of the NetworkPolicy table's sets and maps."),
		written:  g("last_write_objects", "Size of the last transaction on the NetworkPolicy table: the rules, set and map elements, chains and sets it added, flushed or deleted (0: nothing had changed)."),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "writes_total",
			Help: `Syncs of the NetworkPolicy table by what they wrote: "full" (the whole table), "changes" (only what differed), "none" (nothing had changed).`}, []string{"kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "sync_duration_seconds",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
			Help:    "Time to compile the NetworkPolicies and write the table, failures included."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "sync_errors_total",
			Help: "Failed compiles and writes of the NetworkPolicy table."}),
		oversized: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "oversized_policy_elements",
			Help: "NetworkPolicies too big to enforce, by namespace/name, with the set elements and rules each would need: each allows nothing, and the pods it selects stay isolated."}, []string{"policy"}),
	}
	for _, kind := range []string{writeFull, writeChanges, writeNone} {
		m.writes.WithLabelValues(kind) // every kind's series from the start, at 0
	}
	m.counters = newCounterCollector(ns, sub)
	for _, c := range []prometheus.Collector{m.policies, m.pods, m.rules, m.sets, m.elements, m.written, m.duration, m.errors, m.writes, m.oversized, m.counters} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) synced(start time.Time, policies int, st netpol.Stats, err error) {
	if m == nil {
		return
	}
	m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		m.errors.Inc()
		return
	}
	m.policies.Set(float64(policies))
	m.pods.Set(float64(st.Pods))
	m.rules.Set(float64(st.Rules))
	m.sets.Set(float64(st.Sets))
	m.elements.Set(float64(st.Elements))
	m.written.Set(float64(st.Written))
	switch {
	case st.Full:
		m.writes.WithLabelValues(writeFull).Inc()
	case st.Written > 0:
		m.writes.WithLabelValues(writeChanges).Inc()
	default:
		m.writes.WithLabelValues(writeNone).Inc()
	}
}

// unreadable counts a sync with policies the compiler could not read.
func (m *Metrics) unreadable() {
	if m != nil {
		m.errors.Inc()
	}
}

// setOversized makes the oversized gauge hold exactly over.
func (m *Metrics) setOversized(over []netpol.Oversized) {
	if m == nil {
		return
	}
	m.oversized.Reset()
	for _, o := range over {
		m.oversized.WithLabelValues(o.Policy).Set(float64(o.Elements))
	}
}
