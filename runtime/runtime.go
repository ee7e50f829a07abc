package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/keylock"
)

// Runtime relays pod and container lifecycle events to NRI plugins.
type Runtime struct {
	name, version string
	cfg           config
	log           *slog.Logger
	// The optional interfaces of cfg.observer, or nil.
	adjusted   AdjustmentObserver
	counted    PluginCountObserver
	deprecated DeprecationObserver

	mu       sync.Mutex // guards the fields below
	plugins  []*plugin  // joined plugins in invocation order
	admitted map[*plugin]struct{}
	listener net.Listener
	started  bool
	stopped  bool
	// Plugins joining, and the epochs of lifecycle requests that order
	// them (see join.go).
	joining       map[*plugin]*joiner
	epoch, oldest *epoch

	status statusCache

	// podLocks serializes changes to one pod's network record (updates
	// from several plugins at once).
	podLocks keylock.Locks

	ctx    context.Context // lives until Stop; parent of background work
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop and per-plugin goroutines
}

// New returns a Runtime that introduces itself to plugins with name and
// version (e.g. "containerd", "v2.2.1").
func New(name, version string, opts ...Option) (*Runtime, error) {
	if name == "" {
		return nil, errors.New("runtime: empty runtime name")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.noNetExtension && len(cfg.requiredNetwork) > 0 {
		return nil, errors.New("runtime: WithRequiredNetworkPlugins needs the pod network extension, which WithoutNetworkExtension turns off")
	}
	if cfg.sync != nil && cfg.syncCallback != nil {
		return nil, errors.New("runtime: WithSyncFunc and WithSyncCallback both given; choose one")
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := newEpoch()
	adjusted, _ := cfg.observer.(AdjustmentObserver)
	counted, _ := cfg.observer.(PluginCountObserver)
	deprecated, _ := cfg.observer.(DeprecationObserver)
	return &Runtime{
		adjusted:   adjusted,
		counted:    counted,
		deprecated: deprecated,
		name:       name,
		version:    version,
		cfg:        cfg,
		log:        log,
		admitted:   make(map[*plugin]struct{}),
		joining:    make(map[*plugin]*joiner),
		epoch:      e,
		oldest:     e,
		ctx:        ctx,
		cancel:     cancel,
	}, nil
}

// Start launches the pre-installed plugins, waits until each of them has
// joined or failed (failures are logged, not returned), and starts
// accepting external plugins on the socket.
func (r *Runtime) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("runtime: already started")
	}
	r.started = true
	r.mu.Unlock()

	if err := r.launchPlugins(ctx); err != nil {
		return err
	}
	if r.cfg.noExternal {
		return nil
	}
	if r.isStopped() {
		return ErrClosed
	}
	l, err := listen(r.cfg.socketPath)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.stopped { // Stop ran while the socket was being set up
		r.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	r.listener = l
	r.wg.Add(1) // under mu, ordered with Stop as track() is
	r.mu.Unlock()
	go r.acceptLoop(l)
	r.log.Info("accepting NRI plugins", "socket", r.cfg.socketPath)
	return nil
}

// Stop stops accepting plugins, asks every joined plugin to shut down,
// closes all connections and waits for launched plugins to exit and for
// every goroutine of the Runtime, including the callbacks it runs
// (EvictFunc, UpdateFunc, SyncFunc, validators), to end. When ctx ends
// first, it kills the launched plugins still running and returns an error
// wrapping ctx's, leaving what is left to finish in the background. A
// callback must therefore not call Stop, nor wait for it: Stop would wait
// for that callback until ctx ends.
func (r *Runtime) Stop(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	l := r.listener
	plugins := r.plugins
	r.plugins = nil
	pending := make([]*plugin, 0, len(r.admitted))
	for p := range r.admitted {
		pending = append(pending, p)
	}
	r.mu.Unlock()

	if l != nil {
		l.Close()
	}
	var wg sync.WaitGroup
	for _, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.shutdown(ctx)
		}()
	}
	wg.Wait()
	for _, p := range pending {
		p.close(ErrClosed)
	}
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// Kill what is still running and return: what remains (a
		// callback of the runtime's that does not return, a killed
		// process being reaped) finishes in the background.
		for _, p := range append(plugins, pending...) {
			p.kill()
		}
		return fmt.Errorf("runtime: Stop: %w", ctx.Err())
	}
}

// PluginInfo describes a plugin that has joined.
type PluginInfo struct {
	Name   string // full name, "NN-name"
	Index  string
	Kind   string // "external" or "launched"
	Pid    int    // peer process id, 0 if unknown
	Events api.EventMask
	// Restarts counts how often the Runtime launched a pre-installed
	// plugin again after its process exited (see WithRestartBackoff).
	Restarts int
}

// Plugins returns the joined plugins in invocation order.
func (r *Runtime) Plugins() []PluginInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PluginInfo, 0, len(r.plugins))
	for _, p := range r.plugins {
		out = append(out, p.info())
	}
	return out
}

// PluginConnected reports whether the plugin of full name "NN-name" has
// joined and is still connected.
func (r *Runtime) PluginConnected(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.plugins, func(p *plugin) bool { return p.fullName() == name && !p.isClosed() })
}

// connectedNames returns the full names of the joined plugins that are
// still connected.
func (r *Runtime) connectedNames() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make(map[string]bool, len(r.plugins))
	for _, p := range r.plugins {
		if !p.isClosed() {
			names[p.fullName()] = true
		}
	}
	return names
}

// insertLocked adds p to the dispatch list, keeping it in invocation
// order: by index, then by name.
func (r *Runtime) insertLocked(p *plugin) {
	r.plugins = append(r.plugins, p)
	slices.SortStableFunc(r.plugins, func(a, b *plugin) int {
		return cmp.Or(cmp.Compare(a.idx, b.idx), cmp.Compare(a.name, b.name))
	})
	order := make([]string, len(r.plugins))
	for i, q := range r.plugins {
		order[i] = q.fullName()
	}
	r.log.Info("plugin joined", "plugin", p.fullName(), "kind", p.kind, "pid", p.pid,
		"events", p.events.String(), "order", order)
	if r.counted != nil {
		r.counted.PluginCount(len(r.plugins))
	}
}

// drop removes a closed plugin from the lists.
func (r *Runtime) drop(p *plugin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.admitted, p)
	n := len(r.plugins)
	r.plugins = slices.DeleteFunc(r.plugins, func(q *plugin) bool { return q == p })
	if r.counted != nil && len(r.plugins) != n {
		r.counted.PluginCount(len(r.plugins))
	}
}

// subscribed returns the joined plugins subscribed to ev, in order, for
// requests that are no lifecycle events (validation, status).
func (r *Runtime) subscribed(ev api.Event) []*plugin {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*plugin
	for _, p := range r.plugins {
		if p.events.IsSet(ev) && !p.isClosed() {
			out = append(out, p)
		}
	}
	return out
}

// admit starts the handshake of a new connection on its own goroutine.
func (r *Runtime) admit(p *plugin) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrClosed
	}
	if p.isClosed() {
		return p.reason()
	}
	r.admitted[p] = struct{}{}
	return nil
}

func (r *Runtime) String() string { return fmt.Sprintf("runtime %s %s", r.name, r.version) }

// track counts one more goroutine or call that Stop waits for, unless the
// Runtime has stopped. It holds mu, so it is ordered with Stop, which sets
// stopped under mu before it waits. The caller calls r.wg.Done.
func (r *Runtime) track() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	r.wg.Add(1)
	return true
}
