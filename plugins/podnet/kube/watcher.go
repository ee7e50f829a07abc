package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nrinet/nrinet/plugins/podnet/internal/reconcile"
)

// Kinds of reconcile, as passed to [WithReconcileHook]'s function.
const (
	KindRoutes     = "routes"
	KindMasquerade = "masquerade"
	KindForwarding = "forwarding"
)

// DefaultResyncPeriod is how often a [Watcher] checks routes, masquerade
// and forwarding again when no Node changed.
const DefaultResyncPeriod = time.Minute

// Masquerader keeps the masquerade rules for a node's pod CIDRs;
// [*github.com/nrinet/nrinet/plugins/podnet/masq.Masquerader] is one.
type Masquerader interface {
	Sync(podCIDRs, clusterCIDRs []netip.Prefix) (changed bool, err error)
}

// config is a [Watcher]'s, set by its options. The zero value watches
// the Node's pod CIDRs and manages nothing.
type config struct {
	logger       *slog.Logger
	router       *Router
	masquerade   Masquerader
	clusterCIDRs []netip.Prefix
	forwarding   bool
	resyncPeriod time.Duration
	onReconcile  func(kind string, changed bool, err error)
}

// Option configures a [Watcher].
type Option func(*config) error

// WithLogger gives the Watcher a logger for what it waits for, changes
// and fails at (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("kube: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithRouter makes the Watcher keep, through r, a route to every other
// Node's pod CIDRs.
func WithRouter(r *Router) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("kube: WithRouter: nil Router")
		}
		c.router = r
		return nil
	}
}

// WithMasquerade makes the Watcher sync m with this node's pod CIDRs (the
// ones in use) and clusterCIDRs, once the pod CIDRs are known.
func WithMasquerade(m Masquerader, clusterCIDRs []netip.Prefix) Option {
	return func(c *config) error {
		if m == nil {
			return errors.New("kube: WithMasquerade: nil Masquerader")
		}
		c.masquerade, c.clusterCIDRs = m, clusterCIDRs
		return nil
	}
}

// WithForwarding makes the Watcher turn on IP forwarding in the process's
// network namespace for the families of the pod CIDRs in use
// (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding).
func WithForwarding() Option {
	return func(c *config) error {
		c.forwarding = true
		return nil
	}
}

// WithResyncPeriod sets how often routes, masquerade and forwarding are
// checked again without a Node event (default [DefaultResyncPeriod]). A
// failed reconcile is retried sooner, from 1 s doubling up to it.
func WithResyncPeriod(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("kube: resync period %v: want > 0", d)
		}
		c.resyncPeriod = d
		return nil
	}
}

// WithReconcileHook makes the Watcher call f after each reconcile of a
// kind (KindRoutes, KindMasquerade, KindForwarding) with whether it
// changed anything and its error: the hook for metrics. f runs on the
// Watcher's goroutine and must not block.
func WithReconcileHook(f func(kind string, changed bool, err error)) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("kube: WithReconcileHook: nil function")
		}
		c.onReconcile = f
		return nil
	}
}

// Watcher watches the Nodes through a client-go informer: this node's pod
// CIDRs, and the other Nodes' pod CIDRs and InternalIPs for the routes.
// See the package documentation for what it does when this node's pod
// CIDRs change.
type Watcher struct {
	client kubernetes.Interface
	node   string
	opts   config
	log    *slog.Logger
	known  chan struct{} // closed when the pod CIDRs are first known

	mu       sync.Mutex // guards the fields below
	running  bool
	inUse    []netip.Prefix // the pod CIDRs served, fixed once known
	notReady string         // why not ready; "" when ready
	skipped  string         // the routes skipped last time, for logging changes
}

// NewWatcher returns a Watcher of node (this node's name) through client.
// Nothing happens until Run.
func NewWatcher(client kubernetes.Interface, node string, opts ...Option) (*Watcher, error) {
	if client == nil {
		return nil, errors.New("kube: no Kubernetes client")
	}
	if node == "" {
		return nil, errors.New("kube: no node name (give -node-name or set NODE_NAME)")
	}
	c := config{logger: slog.New(slog.DiscardHandler), resyncPeriod: DefaultResyncPeriod}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &Watcher{
		client:   client,
		node:     node,
		opts:     c,
		log:      c.logger.With("node", node),
		known:    make(chan struct{}),
		notReady: "waiting for the list of Nodes from the API server",
	}, nil
}

// Ready reports whether this node's pod CIDRs are known and unchanged
// since they were taken, and if not, why: the readiness a health endpoint
// reports.
func (w *Watcher) Ready() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.notReady != "" {
		return false, w.notReady
	}
	return true, fmt.Sprintf("serving pod CIDRs %v of Node %s", w.inUse, w.node)
}

// PodCIDRs waits until this node's Node has pod CIDRs and returns them
// (at most one per family, IPv4 first). Later calls return the same ones,
// even after the Node changed: see the package documentation. It returns
// early with ctx's error.
func (w *Watcher) PodCIDRs(ctx context.Context) ([]netip.Prefix, error) {
	select {
	case <-w.known:
	default:
		_, why := w.Ready()
		w.log.Info("waiting for this node's pod CIDRs before serving pods", "reason", why)
		select {
		case <-w.known:
		case <-ctx.Done():
			return nil, fmt.Errorf("kube: waiting for the pod CIDRs of Node %s: %w", w.node, ctx.Err())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.inUse), nil
}

// Run watches the Nodes and reconciles until ctx is done, then stops the
// informer, waits for its goroutines and returns nil. It leaves routes,
// masquerade and forwarding as they are. It may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return errors.New("kube: Watcher.Run called twice")
	}
	w.running = true
	w.mu.Unlock()

	factory := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTransform(slimNode))
	defer factory.Shutdown() // after cancel, below: waits for the informer's goroutines
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodes := factory.Core().V1().Nodes()
	informer := nodes.Informer()
	runner, err := reconcile.New("kube: Node watcher", func(context.Context) error {
		return w.reconcile(nodes.Lister().List(labels.Everything()))
	}, reconcile.WithRetry(time.Second, max(time.Second, w.opts.resyncPeriod)), reconcile.WithResync(w.opts.resyncPeriod))
	if err != nil {
		return err
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { runner.Poke() },
		UpdateFunc: func(any, any) { runner.Poke() },
		DeleteFunc: func(any) { runner.Poke() },
	}); err != nil {
		return fmt.Errorf("kube: watching Nodes: %w", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx done
	}
	w.log.Debug("Node list synced")
	return runner.Run(ctx)
}

// reconcile takes the Node list from the informer's cache: this node's
// pod CIDRs, then routes, masquerade and forwarding. It returns the
// errors of the last three, joined.
func (w *Watcher) reconcile(objs []*corev1.Node, listErr error) error {
	if listErr != nil {
		return fmt.Errorf("kube: listing Nodes from the cache: %w", listErr)
	}
	var (
		self     Node
		selfErr  error
		found    bool
		others   []Node
		problems []string
	)
	for _, obj := range objs {
		n, err := NodeFromObject(obj)
		if obj.Name == w.node {
			self, selfErr, found = n, err, true
			continue
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		others = append(others, n)
	}
	inUse := w.updateSelf(found, self, selfErr)

	var errs []error
	if w.opts.router != nil {
		own := slices.Concat(inUse, self.PodCIDRs)
		routes, skipped := RoutesFor(w.node, own, others)
		w.logSkipped(append(problems, skipped...))
		changed, err := w.opts.router.Sync(routes)
		w.done(KindRoutes, changed, err, &errs)
	}
	if inUse == nil {
		return errors.Join(errs...)
	}
	if w.opts.masquerade != nil {
		changed, err := w.opts.masquerade.Sync(inUse, w.opts.clusterCIDRs)
		w.done(KindMasquerade, changed, err, &errs)
	}
	if w.opts.forwarding {
		var v4, v6 bool
		for _, p := range inUse {
			v4, v6 = v4 || p.Addr().Is4(), v6 || p.Addr().Is6()
		}
		changed, err := ensureForwarding(w.log, v4, v6)
		w.done(KindForwarding, changed, err, &errs)
	}
	return errors.Join(errs...)
}

// done reports one reconcile: logs its error, calls the hook.
func (w *Watcher) done(kind string, changed bool, err error, errs *[]error) {
	if err != nil {
		w.log.Error("reconcile failed; retrying", "kind", kind, "error", err)
		*errs = append(*errs, err)
	}
	if w.opts.onReconcile != nil {
		w.opts.onReconcile(kind, changed, err)
	}
}

// logSkipped logs the Nodes and routes left out when they change.
func (w *Watcher) logSkipped(skipped []string) {
	s := strings.Join(skipped, "; ")
	w.mu.Lock()
	same := s == w.skipped
	w.skipped = s
	w.mu.Unlock()
	if !same && s != "" {
		w.log.Warn("routes to other nodes left out", "skipped", s)
	}
}

// updateSelf takes this node's state: the pod CIDRs the first time there
// are some, and readiness. It returns the pod CIDRs in use (nil while
// unknown).
func (w *Watcher) updateSelf(found bool, n Node, err error) []netip.Prefix {
	w.mu.Lock()
	defer w.mu.Unlock()
	var why string
	serving := ""
	if w.inUse != nil {
		serving = fmt.Sprintf("; nri-podnet keeps serving %v", w.inUse)
	}
	switch {
	case !found && w.inUse == nil:
		why = fmt.Sprintf("waiting for Node %s to exist", w.node)
	case !found:
		why = fmt.Sprintf("Node %s is gone%s", w.node, serving)
	case err != nil:
		why = err.Error() + serving
	case len(n.PodCIDRs) == 0 && w.inUse == nil:
		why = fmt.Sprintf("waiting for Node %s to get spec.podCIDRs (kube-controller-manager --allocate-node-cidrs allocates them)", w.node)
	case len(n.PodCIDRs) == 0:
		why = fmt.Sprintf("Node %s has no spec.podCIDRs any more%s", w.node, serving)
	case w.inUse == nil:
		w.inUse = n.PodCIDRs
		close(w.known)
		w.log.Info("pod CIDRs known", "podCIDRs", fmt.Sprint(w.inUse))
	case !slices.Equal(n.PodCIDRs, w.inUse):
		why = fmt.Sprintf("the pod CIDRs of Node %s changed from %v to %v%s; drain the node and restart nri-podnet to take the new ones",
			w.node, w.inUse, n.PodCIDRs, serving)
	}
	if why != w.notReady {
		switch {
		case why == "" && w.inUse != nil && w.notReady != "" && !strings.HasPrefix(w.notReady, "waiting"):
			w.log.Info("Node back to the pod CIDRs in use; ready", "podCIDRs", fmt.Sprint(w.inUse))
		case why != "" && w.inUse != nil:
			w.log.Error("not ready", "reason", why)
		case why != "":
			w.log.Info("not ready", "reason", why)
		}
		w.notReady = why
	}
	return slices.Clone(w.inUse)
}
