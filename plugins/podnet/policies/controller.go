package policies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/internal/reconcile"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// Enforcer applies a compiled program; *netpol.Enforcer is one.
type Enforcer interface {
	Sync(p *netpol.Program) (netpol.Stats, error)
}

var _ podnet.Policies = (*Controller)(nil)

// config is a [Controller]'s, set by its options.
type config struct {
	logger  *slog.Logger
	metrics *Metrics
}

// Option configures a [Controller].
type Option func(*config) error

// WithLogger gives the Controller a logger (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("policies: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithMetrics makes the Controller record its metrics in m; a nil m
// records none, as without the option.
func WithMetrics(m *Metrics) Option {
	return func(c *config) error {
		c.metrics = m
		return nil
	}
}

// Controller keeps the node's NetworkPolicy table in step with the API
// (NetworkPolicies, Namespaces and Pods, through client-go informers) and
// with the node's pods (SetPod, RemovePod, SyncPods): see the package
// documentation.
type Controller struct {
	client   kubernetes.Interface
	node     string
	enforcer Enforcer
	log      *slog.Logger
	metrics  *Metrics
	// runner runs sync: at Run's start, on every change (kick), and
	// after a failed apply, again from 100 ms doubling up to 10 s.
	runner *reconcile.Runner

	mu      sync.Mutex // guards the fields below
	running bool
	local   map[string]podnet.PolicyPod // by sandbox ID
	// localKnown: SyncPods or SetPod has told the node's pods. Until then
	// nothing is written: the table a previous nri-podnet left keeps
	// enforcing for the pods that run (an empty program would open them
	// until the runtime's Synchronize arrives).
	localKnown bool
	// gen counts the changes of local; applied is the gen of the last
	// program in the kernel, failed the gen whose apply failed last
	// (with failErr); changed is closed and replaced after each apply.
	gen, applied, failed uint64
	failErr              error
	changed              chan struct{}
	synced               bool // the informers had their lists and the policies compiled
	notReady             string
	// lister is set by Run before its loop and used by Run's goroutine
	// only; so is policies, the policies of the last program applied
	// ("namespace/name" → resourceVersion), for logging changes.
	lister   listers
	policies map[string]string
	// program is the last program applied (Explain), under mu.
	program *netpol.Program
	// blocks keeps the ipBlocks' address sets from one sync to the next
	// (a pod's start compiles again what the last sync compiled).
	blocks *netpol.Cache
	// oversized are the policies too big to enforce at the last compile,
	// with the elements they would need (reportOversized).
	oversized map[string]int
}

type listers struct {
	policies   func() ([]*networkingv1.NetworkPolicy, error)
	namespaces func() ([]*corev1.Namespace, error)
	pods       func() ([]*corev1.Pod, error)
}

// New returns a Controller for node (this node's name) that writes its
// programs with enforcer. Nothing happens until Run.
func New(client kubernetes.Interface, node string, enforcer Enforcer, opts ...Option) (*Controller, error) {
	if client == nil || enforcer == nil {
		return nil, errors.New("policies: New needs a Kubernetes client and an enforcer")
	}
	if node == "" {
		return nil, errors.New("policies: no node name")
	}
	o := config{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if r, ok := enforcer.(CounterReader); ok {
		if err := o.metrics.bindCounters(r, o.logger.With("component", "netpol")); err != nil {
			return nil, err
		}
	}
	c := &Controller{
		client: client, node: node, enforcer: enforcer, metrics: o.metrics,
		log:      o.logger.With("component", "netpol"),
		local:    map[string]podnet.PolicyPod{},
		blocks:   netpol.NewCache(),
		changed:  make(chan struct{}),
		notReady: "waiting for the lists of NetworkPolicies, Namespaces and Pods from the API server",
	}
	var err error
	c.runner, err = reconcile.New("policies", func(context.Context) error { return c.sync() },
		reconcile.WithRetry(100*time.Millisecond, 10*time.Second))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// notReadyUntilPodsKnown is why the Controller is not ready between its
// first sync, which compiles the policies, and its first write, which
// waits for the node's pods from the runtime.
const notReadyUntilPodsKnown = "NetworkPolicies compiled; the table is written once the runtime's pods are known (NRI Synchronize)"

// Ready reports whether the first full sync is done (the informers had
// their lists, the policies compiled and, once the runtime told the
// node's pods, the table was written) and the last write of the table
// succeeded, and if not, why. WaitSynced returns before Ready is true:
// the table's first write needs the runtime's pods, which nri-podnet
// learns by joining the runtime after WaitSynced.
func (c *Controller) Ready() (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notReady != "" {
		return false, c.notReady
	}
	return true, "NetworkPolicies enforced"
}

// WaitSynced waits for the first full sync (the informers' lists, the
// policies compiled), or ctx.
func (c *Controller) WaitSynced(ctx context.Context) error {
	for {
		c.mu.Lock()
		synced, ch := c.synced, c.changed
		c.mu.Unlock()
		if synced {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("policies: waiting for the first sync of NetworkPolicies: %w", ctx.Err())
		}
	}
}

// kick asks for a sync; kicks before the running sync ends are one.
func (c *Controller) kick() { c.runner.Poke() }

// SetPod adds or updates a pod of this node and waits until the table in
// the kernel covers it (the policies that select it, and its address as
// a peer of the node's other pods), so that its first packet meets them.
// It returns the apply's error, or ctx's.
func (c *Controller) SetPod(ctx context.Context, pod podnet.PolicyPod) error {
	return c.changeLocal(ctx, "pod "+pod.Namespace+"/"+pod.Name, func() { c.local[pod.ID] = pod })
}

// RemovePod forgets a pod of this node; the table drops its rules at the
// next apply, which it does not wait for.
func (c *Controller) RemovePod(id string) {
	c.mu.Lock()
	if _, ok := c.local[id]; ok {
		delete(c.local, id)
		c.gen++
	}
	c.mu.Unlock()
	c.kick()
}

// SyncPods replaces the node's pods with pods (the runtime's, at
// Synchronize) and waits until the table covers them.
func (c *Controller) SyncPods(ctx context.Context, pods []podnet.PolicyPod) error {
	return c.changeLocal(ctx, fmt.Sprintf("%d pods", len(pods)), func() {
		c.local = make(map[string]podnet.PolicyPod, len(pods))
		for _, p := range pods {
			c.local[p.ID] = p
		}
	})
}

// changeLocal makes change to the node's pods, holding c.mu, then asks
// for a sync and waits until the table covers the change; what names the
// pods in its error.
func (c *Controller) changeLocal(ctx context.Context, what string, change func()) error {
	c.mu.Lock()
	change()
	c.localKnown = true
	c.gen++
	g := c.gen
	c.mu.Unlock()
	c.kick()
	return c.waitApplied(ctx, g, what)
}

func (c *Controller) waitApplied(ctx context.Context, g uint64, what string) error {
	for {
		c.mu.Lock()
		applied, failed, failErr, ch, running := c.applied, c.failed, c.failErr, c.changed, c.running
		c.mu.Unlock()
		switch {
		case applied >= g:
			return nil
		case failed >= g:
			return fmt.Errorf("policies: enforcing NetworkPolicies for %s: %w", what, failErr)
		case !running:
			return fmt.Errorf("policies: enforcing NetworkPolicies for %s: the controller is not running", what)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("policies: enforcing NetworkPolicies for %s: %w", what, ctx.Err())
		}
	}
}

// Run watches the API and applies the program on every change until ctx
// is done; then it stops the informers, waits for their goroutines and
// returns nil. It may be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("policies: Controller.Run called twice")
	}
	c.running = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}()

	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTransform(slim))
	defer factory.Shutdown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pol := factory.Networking().V1().NetworkPolicies()
	ns := factory.Core().V1().Namespaces()
	pods := factory.Core().V1().Pods()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.kick() },
		UpdateFunc: func(any, any) { c.kick() },
		DeleteFunc: func(any) { c.kick() },
	}
	// The handlers' registrations, whose HasSynced says the handler has
	// been told of every object of the initial list, not only that the
	// cache holds them.
	var regs []cache.ResourceEventHandlerRegistration
	for _, inf := range []cache.SharedIndexInformer{pol.Informer(), ns.Informer()} {
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return fmt.Errorf("policies: watching: %w", err)
		}
		regs = append(regs, reg)
	}
	// A cluster's pods change all the time in ways the program does not
	// see (their status's conditions, containers' states): only what
	// compile reads starts a sync.
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && c.podMatters(p) {
				c.kick()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || c.podChangeMatters(o, n) {
				c.kick()
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); !ok || c.podMatters(p) {
				c.kick() // a tombstone (cache.DeletedFinalStateUnknown) too
			}
		},
	})
	if err != nil {
		return fmt.Errorf("policies: watching: %w", err)
	}
	regs = append(regs, reg)
	c.lister = listers{
		policies:   func() ([]*networkingv1.NetworkPolicy, error) { return pol.Lister().List(labels.Everything()) },
		namespaces: func() ([]*corev1.Namespace, error) { return ns.Lister().List(labels.Everything()) },
		pods:       func() ([]*corev1.Pod, error) { return pods.Lister().List(labels.Everything()) },
	}
	factory.Start(ctx.Done())
	start := time.Now()
	synced := make([]cache.InformerSynced, 0, len(regs))
	for _, r := range regs {
		synced = append(synced, r.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	c.log.Info("NetworkPolicies, Namespaces and Pods listed", "after", time.Since(start).Round(time.Millisecond))
	// Every object of the initial lists is in the caches the first sync
	// reads, and the kicks their events left are that one sync (the
	// runner coalesces them): no whole sync in the way of the first change
	// at cluster scale.
	return c.runner.Run(ctx)
}

// sync compiles the program from the caches and the local pods and
// applies it.
func (c *Controller) sync() error {
	start := time.Now()
	c.mu.Lock()
	g, known := c.gen, c.localKnown
	local := slices.Collect(maps.Values(c.local))
	c.mu.Unlock()
	p, pols, err := c.compile(local, known)
	npol := len(pols)
	if p != nil {
		c.reportOversized(p.Oversized)
	}
	if err != nil && p != nil {
		// Policies the compiler could not read, or too big to enforce,
		// fail closed, each alone (netpol.Compile); the program holds the
		// others.
		if unreadable := withoutOversized(err); unreadable != nil {
			c.log.Error("NetworkPolicies the engine cannot read: enforced as allowing nothing", "error", unreadable)
			c.metrics.unreadable()
		}
		err = nil
	}
	var st netpol.Stats
	if err == nil && !known {
		// The first full sync before the node's pods are known: the
		// policies compile; the table stays as it is (see localKnown).
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.synced {
			// Synced lets nri-podnet join the runtime (WaitSynced); ready
			// waits for the table that the runtime's pods let it write.
			c.synced, c.notReady = true, notReadyUntilPodsKnown
			c.log.Info("NetworkPolicies listed; the table is written once the runtime's pods are known", "policies", npol, "in", time.Since(start).Round(time.Microsecond))
		}
		c.logPolicyChanges(pols, st, time.Since(start))
		close(c.changed)
		c.changed = make(chan struct{})
		return nil
	}
	if err == nil {
		st, err = c.enforcer.Sync(p)
	}
	c.metrics.synced(start, npol, st, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed, c.failErr = g, err
		c.log.Error("enforcing NetworkPolicies", "error", err)
		if c.synced {
			c.notReady = "writing the NetworkPolicy table failed: " + err.Error()
		}
	} else {
		if c.failed > 0 && c.failed <= g {
			c.log.Info("NetworkPolicies enforced again")
		}
		c.applied, c.program = g, p
		c.logPolicyChanges(pols, st, time.Since(start))
		if !c.synced {
			c.log.Info("NetworkPolicies enforced", "policies", npol, "isolatedPods", st.Pods, "rules", st.Rules, "sets", st.Sets, "elements", st.Elements, "in", time.Since(start).Round(time.Microsecond))
		}
		c.synced, c.notReady = true, ""
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return err
}

// ErrNoProgram is Explain's error before the first table is written.
var ErrNoProgram = errors.New("policies: no NetworkPolicy table written yet")

// Explain says which policies allow or deny the first packet of flow in
// the table last written (netpol.Program.Explain).
func (c *Controller) Explain(flow netpol.Flow) (netpol.Explanation, error) {
	c.mu.Lock()
	p := c.program
	c.mu.Unlock()
	if p == nil {
		return netpol.Explanation{}, ErrNoProgram
	}
	return p.Explain(flow), nil
}

// reportOversized logs each policy that became too big to enforce, or
// stopped being, once, and keeps the metric in line.
func (c *Controller) reportOversized(over []netpol.Oversized) {
	c.metrics.setOversized(over)
	now := make(map[string]int, len(over))
	for _, o := range over {
		now[o.Policy] = o.Elements
		if _, had := c.oversized[o.Policy]; !had {
			c.log.Error("NetworkPolicy too big to enforce: it allows nothing, and the pods it selects stay isolated",
				"policy", o.Policy, "elements", o.Elements, "max", netpol.DefaultMaxPolicyElements)
		}
	}
	for name := range c.oversized {
		if _, ok := now[name]; !ok {
			c.log.Info("NetworkPolicy no longer too big: enforced", "policy", name)
		}
	}
	c.oversized = now
}

// withoutOversized is err (netpol.Compile's, joined PolicyErrors) less
// the OversizedErrors, or nil when nothing else is left.
func withoutOversized(err error) error {
	var rest []error
	for _, e := range unjoin(err) {
		var o *netpol.OversizedError
		if !errors.As(e, &o) {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// compile builds the program: the API's policies, namespaces and pods,
// with this node's pods (local) as the runtime described them, their
// labels and named ports taken from the API object of the same UID when
// the cache has it. Once the node's pods are known, the API's other pods
// of this node are left out.
func (c *Controller) compile(local []podnet.PolicyPod, known bool) (*netpol.Program, []*networkingv1.NetworkPolicy, error) {
	pols, err := c.lister.policies()
	if err != nil {
		return nil, nil, err
	}
	nsObjs, err := c.lister.namespaces()
	if err != nil {
		return nil, pols, err
	}
	podObjs, err := c.lister.pods()
	if err != nil {
		return nil, pols, err
	}
	namespaces := make([]netpol.Namespace, 0, len(nsObjs))
	for _, n := range nsObjs {
		namespaces = append(namespaces, netpol.Namespace{Name: n.Name, Labels: n.Labels})
	}
	byUID := make(map[string]*corev1.Pod, len(podObjs))
	for _, o := range podObjs {
		byUID[string(o.UID)] = o
	}
	pods := make([]netpol.Pod, 0, len(podObjs)+len(local))
	localUIDs := make(map[string]bool, len(local))
	for _, lp := range local {
		localUIDs[lp.UID] = true
		p := netpol.Pod{Namespace: lp.Namespace, Name: lp.Name, Labels: podLabels(lp.Labels), IPs: lp.IPs, Local: true}
		if o := byUID[lp.UID]; o != nil {
			p.Labels, p.Ports = o.Labels, namedPorts(o)
		}
		pods = append(pods, p)
	}
	for _, o := range podObjs {
		if localUIDs[string(o.UID)] || o.Spec.HostNetwork || isTerminal(o) {
			continue
		}
		// This node's pods are the runtime's to tell, once it has: an API
		// Pod of this node that is not one of them is gone (its address
		// may be another pod's now) or not set up yet.
		if known && o.Spec.NodeName == c.node {
			continue
		}
		var ips []netip.Addr
		for _, pip := range o.Status.PodIPs {
			if a, err := netip.ParseAddr(pip.IP); err == nil {
				ips = append(ips, a)
			}
		}
		if len(ips) == 0 {
			continue
		}
		pods = append(pods, netpol.Pod{Namespace: o.Namespace, Name: o.Name, Labels: o.Labels, IPs: ips, Ports: namedPorts(o)})
	}
	p, err := c.blocks.CompileMax(pols, namespaces, pods, netpol.DefaultMaxPolicyElements)
	return p, pols, err
}

// logPolicyChanges logs each policy added, changed or deleted since the
// last program applied, by name, with what the new table holds.
func (c *Controller) logPolicyChanges(pols []*networkingv1.NetworkPolicy, st netpol.Stats, took time.Duration) {
	now := make(map[string]string, len(pols))
	for _, p := range pols {
		now[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	if c.policies != nil {
		for _, name := range slices.Sorted(maps.Keys(now)) {
			old, had := c.policies[name]
			switch {
			case !had:
				c.log.Info("NetworkPolicy added: enforced", "policy", name, "isolatedPods", st.Pods, "rules", st.Rules, "in", took.Round(time.Microsecond))
			case old != now[name]:
				c.log.Info("NetworkPolicy changed: enforced", "policy", name, "isolatedPods", st.Pods, "rules", st.Rules, "in", took.Round(time.Microsecond))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(c.policies)) {
			if _, ok := now[name]; !ok {
				c.log.Info("NetworkPolicy deleted: no longer enforced", "policy", name, "isolatedPods", st.Pods, "rules", st.Rules, "in", took.Round(time.Microsecond))
			}
		}
	}
	c.policies = now
}

// podLabels are a sandbox's labels without the kubelet's own.
func podLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		if strings.HasPrefix(k, "io.kubernetes.pod.") {
			continue
		}
		out[k] = v
	}
	return out
}

// podMatters reports whether compile reads anything of p: a pod of this
// node (its labels and named ports complete what the runtime tells), or
// one of another node with addresses (a peer).
func (c *Controller) podMatters(p *corev1.Pod) bool {
	return p.Spec.NodeName == c.node || !p.Spec.HostNetwork && len(p.Status.PodIPs) > 0
}

// podChangeMatters reports whether a pod's update changes what compile
// reads of it.
func (c *Controller) podChangeMatters(old, new *corev1.Pod) bool {
	if !c.podMatters(old) && !c.podMatters(new) {
		return false
	}
	return old.UID != new.UID || old.Spec.NodeName != new.Spec.NodeName || old.Spec.HostNetwork != new.Spec.HostNetwork ||
		isTerminal(old) != isTerminal(new) || !maps.Equal(old.Labels, new.Labels) ||
		!slices.Equal(old.Status.PodIPs, new.Status.PodIPs) || !slices.Equal(namedPorts(old), namedPorts(new))
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// namedPorts are the named ports of a pod's containers.
func namedPorts(o *corev1.Pod) []netpol.NamedPort {
	var out []netpol.NamedPort
	for _, ctr := range o.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "" {
				continue
			}
			proto := netpol.TCP
			switch p.Protocol {
			case corev1.ProtocolUDP:
				proto = netpol.UDP
			case corev1.ProtocolSCTP:
				proto = netpol.SCTP
			}
			out = append(out, netpol.NamedPort{Name: p.Name, Protocol: proto, Port: uint16(p.ContainerPort)})
		}
	}
	return out
}
