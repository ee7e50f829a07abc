package podnet

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugins/internal/opmetrics"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// Operations, the values of the op label of nrinet_podnet_errors_total.
const (
	OpSetup    = opmetrics.Setup    // RunPodSandbox: a pod's network set up
	OpTeardown = opmetrics.Teardown // StopPodSandbox: a pod's network taken down
	OpStatus   = opmetrics.Status   // PodSandboxStatus
	OpSync     = opmetrics.Sync     // Synchronize: reconciling with the runtime's pods
)

// Kinds of reconciliation, the values of the kind label of
// nrinet_podnet_reconciles_total.
const (
	ReconcileSync       = "sync"       // a Synchronize run
	ReconcileRoutes     = "routes"     // routes to other nodes brought in line with the Node list
	ReconcileMasquerade = "masquerade" // masquerade rules brought in line with the pod and cluster CIDRs
)

// Metrics are nri-podnet's Prometheus metrics, registered on the
// Registerer given to [NewMetrics] (never on a global one):
//
//	nrinet_podnet_addresses_in_use{subnet}     gauge: addresses of the subnet pods hold
//	nrinet_podnet_addresses_free{subnet}       gauge: addresses of the subnet still to hand out
//	nrinet_podnet_setup_duration_seconds       histogram: RunPodSandbox of pods with a network namespace
//	nrinet_podnet_teardown_duration_seconds    histogram: StopPodSandbox of such pods
//	nrinet_podnet_errors_total{op}             counter: failed setup, teardown, status, sync
//	nrinet_podnet_reconciles_total{kind}       counter: reconciliations (sync, routes, masquerade)
//	nrinet_podnet_hostports{protocol,family}   gauge: host ports published, per protocol (tcp, udp, sctp) and family (ipv4, ipv6)
//	nrinet_podnet_hostport_conflicts_total     counter: pods refused because another pod holds a host port they ask for
//	nrinet_podnet_portsec_drops_total{pod,interface,reason}  counter: frames a pod sent that port security dropped, per pod (namespace/name), interface (eth0, or a secondary bridge network's netN) and reason
//	nrinet_podnet_portsec_unknown_port_drops_total counter: frames dropped on a host veth of nri-podnet's (eth0's or a secondary interface's) that no live pod owns
//
// The address gauges are read from the allocator ([ipam.Allocator.Usage])
// at each scrape, for the subnets configured then; before the plugin is
// configured there are none. Every op and kind has its series from the
// start, at 0. The host port gauge counts a mapping once per family it is
// published in (an empty host IP of a dual-stack pod: twice), read from
// the plugin at each scrape; a protocol and family without mappings has
// no series. Pass Metrics to [New] with [WithMetrics]; one Metrics
// serves one Plugin. The methods of a nil *Metrics do nothing.
type Metrics struct {
	ops         *opmetrics.Ops
	reconciles  *prometheus.CounterVec
	conflicts   prometheus.Counter
	inUse, free *prometheus.Desc
	hostports   *prometheus.Desc
	drops       *prometheus.Desc
	unknownPort *prometheus.Desc

	mu     sync.Mutex // guards plugin
	plugin *Plugin    // whose allocator the address gauges read; nil before WithMetrics
}

// NewMetrics creates nri-podnet's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("podnet: NewMetrics: nil Registerer")
	}
	const ns = "nrinet_podnet"
	m := &Metrics{
		ops: opmetrics.New(ns, opmetrics.Help{
			Setup:    "Time to set up a pod's network (RunPodSandbox of a pod with a network namespace), failures included.",
			Teardown: "Time to take a pod's network down (StopPodSandbox of a pod with a network namespace), failures included.",
			Errors:   "Failed operations, by op: setup, teardown, status, sync.",
		}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "reconciles_total",
			Help: "Reconciliations, by kind: sync (Synchronize with the runtime's pods), routes (to other nodes), masquerade.",
		}, []string{"kind"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "hostport_conflicts_total",
			Help: "Pods refused (RunPodSandbox failed) because another pod holds a host port, protocol and host IP they ask for.",
		}),
		hostports: prometheus.NewDesc(ns+"_hostports", "Host ports published, by protocol and family (a mapping for every local address of a dual-stack pod counts in both).",
			[]string{"protocol", "family"}, nil),
		drops: prometheus.NewDesc(ns+"_portsec_drops_total", "Frames a pod sent that port security dropped, by pod (namespace/name), interface (eth0, or netN of a secondary bridge network) and reason (mac, vlan, router, nd, ipv4-source, arp, ipv6-source, ethertype), read from the kernel's counters; they start again at 0 when nri-podnet restarts.",
			[]string{"pod", "interface", "reason"}, nil),
		unknownPort: prometheus.NewDesc(ns+"_portsec_unknown_port_drops_total", "Frames dropped on a host veth of nri-podnet's naming (eth0's or a secondary bridge network interface's) that no live pod owns (being set up, or left behind).", nil, nil),
		inUse:       prometheus.NewDesc(ns+"_addresses_in_use", "Addresses of the subnet that pods hold.", []string{"subnet"}, nil),
		free:        prometheus.NewDesc(ns+"_addresses_free", "Addresses of the subnet still free to hand out (saturates at 2^64-1).", []string{"subnet"}, nil),
	}
	for _, kind := range []string{ReconcileSync, ReconcileRoutes, ReconcileMasquerade} {
		m.reconciles.WithLabelValues(kind)
	}
	for _, c := range append(m.ops.Collectors(), m.reconciles, m.conflicts, addressCollector{m}) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("podnet: registering metrics: %w", err)
		}
	}
	return m, nil
}

// Reconciled counts one reconciliation of kind (ReconcileSync,
// ReconcileRoutes, ReconcileMasquerade), whatever its outcome.
func (m *Metrics) Reconciled(kind string) {
	if m != nil {
		m.reconciles.WithLabelValues(kind).Inc()
	}
}

// Failed counts one failed operation op (OpSetup, OpTeardown, OpStatus,
// OpSync).
func (m *Metrics) Failed(op string) {
	if m != nil {
		m.ops.Failed(op)
	}
}

// hostPortConflict counts a pod refused for a host port another holds.
func (m *Metrics) hostPortConflict() {
	if m != nil {
		m.conflicts.Inc()
	}
}

// observe records an operation that started at start and ended with *err
// (opmetrics.Ops.Observe). It is meant to be deferred.
func (m *Metrics) observe(op string, start time.Time, err *error) {
	if m != nil {
		m.ops.Observe(op, start, err)
	}
}

// bind makes m read the address gauges from p.
func (m *Metrics) bind(p *Plugin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plugin != nil && m.plugin != p {
		return errors.New("podnet: WithMetrics: the metrics already serve another plugin")
	}
	m.plugin = p
	return nil
}

// addressCollector collects the address and host port gauges at scrape
// time.
type addressCollector struct{ m *Metrics }

func (c addressCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.inUse
	ch <- c.m.free
	ch <- c.m.hostports
	ch <- c.m.drops
	ch <- c.m.unknownPort
}

func (c addressCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	p := c.m.plugin
	c.m.mu.Unlock()
	if p == nil {
		return
	}
	if hp := p.portMapper(); hp != nil {
		for _, n := range hp.Counts() {
			ch <- prometheus.MustNewConstMetric(c.m.hostports, prometheus.GaugeValue, float64(n.N), n.Protocol.String(), n.Family)
		}
	}
	c.collectDrops(ch, p)
	usage, err := p.usage()
	if err != nil {
		p.log.Warn("reading address usage for metrics", "error", err)
		return
	}
	for _, u := range usage {
		subnet := u.Subnet.String()
		ch <- prometheus.MustNewConstMetric(c.m.inUse, prometheus.GaugeValue, float64(u.InUse), subnet)
		ch <- prometheus.MustNewConstMetric(c.m.free, prometheus.GaugeValue, float64(u.Free), subnet)
	}
}

// collectDrops sends the port security counters: eth0's (once the plugin
// is configured) and those of the secondary bridge networks' interfaces,
// each read on its own, and the unknown ports' of both summed. A read
// that fails is logged, and then the unknown ports' sum (which would be
// short) is not sent.
func (c addressCollector) collectDrops(ch chan<- prometheus.Metric, p *Plugin) {
	send := func(pod, itf string, r portsec.Reason, n uint64) {
		ch <- prometheus.MustNewConstMetric(c.m.drops, prometheus.CounterValue, float64(n), pod, itf, string(r))
	}
	var unknown uint64
	read, ok := false, true
	if g := p.portGuard(); g != nil {
		drops, u, err := g.Drops()
		if err != nil {
			p.log.Warn("reading port security counters for metrics", "error", err)
		}
		for _, d := range drops {
			send(d.Pod, "eth0", d.Reason, d.Packets)
		}
		unknown, read, ok = unknown+u, true, ok && err == nil
	}
	if p.multinet != nil {
		drops, u, err := p.multinet.PortDrops()
		if err != nil {
			p.log.Warn("reading secondary port security counters for metrics", "error", err)
		}
		for _, d := range drops {
			send(d.Pod, d.Interface, d.Reason, d.Packets)
		}
		unknown, read, ok = unknown+u, true, ok && err == nil
	}
	if read && ok {
		ch <- prometheus.MustNewConstMetric(c.m.unknownPort, prometheus.CounterValue, float64(unknown))
	}
}

// usage reads the allocator's usage per subnet; none before the plugin is
// configured or after it is closed.
func (p *Plugin) usage() ([]ipam.Usage, error) {
	p.mu.Lock()
	alloc := p.ipam
	p.mu.Unlock()
	if alloc == nil {
		return nil, nil
	}
	u, err := alloc.Usage()
	if errors.Is(err, ipam.ErrClosed) {
		return nil, nil // closed meanwhile
	}
	return u, err
}
