package policies

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// CounterReader reads the NetworkPolicy table's counters from the
// kernel; *netpol.Enforcer is one. A Controller whose Enforcer is one
// exposes them in its Metrics.
type CounterReader interface {
	Counters() (netpol.Counters, error)
}

var _ CounterReader = (*netpol.Enforcer)(nil)

// counterCollector exposes the table's counters, read from the kernel
// at each scrape:
//
//	NS_allowed_packets_total{policy,direction}  packets opening a connection that a policy's rules allowed
//	NS_denied_packets_total{pod,direction}      packets opening a connection that no policy allowed, per isolated pod
//	NS_denied_unlogged_packets_total            with logDenied: denied packets not logged, over the log's rate
//	NS_denied_logged_packets_total              with logDenied: denied packets logged (lines written)
//	NS_deny_log_overruns_total                  with logDenied: times the log's socket was full and the kernel dropped messages
//
// (NS: the Metrics' namespace and subsystem.)
type counterCollector struct {
	allowed, denied, unlogged, logged, overruns *prometheus.Desc

	mu     sync.Mutex // guards the fields below
	reader CounterReader
	log    *slog.Logger
}

func newCounterCollector(ns, sub string) *counterCollector {
	name := func(n string) string { return prometheus.BuildFQName(ns, sub, n) }
	return &counterCollector{
		allowed: prometheus.NewDesc(name("allowed_packets_total"),
			"Packets opening a connection (conntrack state new) that a NetworkPolicy's rules allowed, by policy (namespace/name) and direction (ingress, egress), read from the kernel; counted for the first of the pod's policies, by namespace/name, whose rule allows the packet. A series exists while the policy isolates a pod of this node in that direction; it starts again at 0 when nri-podnet restarts.",
			[]string{"policy", "direction"}, nil),
		denied: prometheus.NewDesc(name("denied_packets_total"),
			"Packets opening a connection (conntrack state new) that no NetworkPolicy allowed, dropped, by isolated pod of this node (namespace/name) and direction (ingress, egress), read from the kernel. A series exists while the pod is isolated in that direction; it starts again at 0 when nri-podnet restarts.",
			[]string{"pod", "direction"}, nil),
		unlogged: prometheus.NewDesc(name("denied_unlogged_packets_total"),
			"With logDenied: denied packets that were not logged, the log's rate being exceeded, read from the kernel.", nil, nil),
		logged: prometheus.NewDesc(name("denied_logged_packets_total"),
			"With logDenied: denied packets logged, one line each.", nil, nil),
		overruns: prometheus.NewDesc(name("deny_log_overruns_total"),
			"With logDenied: times the deny log's socket was full and the kernel dropped messages (each time one or more).", nil, nil),
	}
}

// bindCounters makes m's counters read from r, logging failures to log.
// The methods of a nil *Metrics do nothing.
func (m *Metrics) bindCounters(r CounterReader, log *slog.Logger) error {
	if m == nil {
		return nil
	}
	c := m.counters
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reader != nil && c.reader != r {
		return errors.New("policies: the Metrics already serve another Controller")
	}
	c.reader, c.log = r, log
	return nil
}

func (c *counterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.allowed, c.denied, c.unlogged, c.logged, c.overruns} {
		ch <- d
	}
}

func (c *counterCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r, log := c.reader, c.log
	c.mu.Unlock()
	if r == nil {
		return
	}
	counts, err := r.Counters()
	if err != nil {
		log.Warn("reading the NetworkPolicy table's counters for metrics", "error", err)
		return
	}
	for _, a := range counts.Allowed {
		ch <- prometheus.MustNewConstMetric(c.allowed, prometheus.CounterValue, float64(a.Packets), a.Policy, a.Direction)
	}
	for _, d := range counts.Denied {
		ch <- prometheus.MustNewConstMetric(c.denied, prometheus.CounterValue, float64(d.Packets), d.Pod, d.Direction)
	}
	if counts.Logging {
		ch <- prometheus.MustNewConstMetric(c.unlogged, prometheus.CounterValue, float64(counts.Unlogged))
		ch <- prometheus.MustNewConstMetric(c.logged, prometheus.CounterValue, float64(counts.Logged))
		ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(counts.LogOverruns))
	}
}
