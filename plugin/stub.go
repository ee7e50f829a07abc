package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nrinet/nrinet/api"
)

// Stub connects one plugin to a runtime and dispatches the runtime's
// requests to the plugin's handlers.
type Stub struct {
	handler     any
	cfg         config
	name, idx   string
	implemented api.EventMask
	log         *slog.Logger

	mu        sync.Mutex // guards the fields below
	sess      *session
	runCancel context.CancelCauseFunc // ends the current Run; nil when none runs

	fdUsed bool // the inherited socket was used (by Start, which is not concurrent)
}

// New returns a Stub for handler, which must implement at least one event
// handler interface of this package. The plugin's name and index come from
// the options, else from NRI_PLUGIN_NAME and NRI_PLUGIN_IDX, else from an
// executable named "NN-name"; an executable not named that way gives the
// name, and the index must then be set explicitly.
func New(handler any, opts ...Option) (*Stub, error) {
	if handler == nil {
		return nil, errors.New("plugin: nil handler")
	}
	s := &Stub{handler: handler, implemented: implementedEvents(handler)}
	for _, o := range opts {
		if err := o(&s.cfg); err != nil {
			return nil, err
		}
	}
	if s.implemented == 0 {
		return nil, fmt.Errorf("%w: %T has none of the event handler methods", ErrNoHandlers, handler)
	}
	if err := oneVariant(handler); err != nil {
		return nil, err
	}
	if err := s.checkNetworkExtension(); err != nil {
		return nil, err
	}
	if s.cfg.env == nil {
		s.cfg.env = os.Getenv
		s.cfg.args0 = os.Args[0]
	}
	if err := s.resolveIdentity(); err != nil {
		return nil, err
	}
	if s.cfg.socketPath == "" {
		s.cfg.socketPath = api.DefaultSocketPath
	}
	logger := s.cfg.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s.log = logger.With("plugin", s.Name())
	return s, nil
}

// resolveIdentity fills in the name and index from options, environment and
// executable name, in that order, and validates them.
func (s *Stub) resolveIdentity() error {
	name, idx := s.cfg.name, s.cfg.idx
	if name == "" {
		name = s.cfg.env(api.PluginNameEnv)
	}
	if idx == "" {
		idx = s.cfg.env(api.PluginIdxEnv)
	}
	if name == "" || idx == "" {
		base := filepath.Base(s.cfg.args0)
		if i, n, err := api.ParsePluginFileName(base); err == nil {
			name, idx = cmp.Or(name, n), cmp.Or(idx, i)
		} else if name == "" {
			name = base
		}
	}
	if err := api.ValidatePluginName(name); err != nil {
		return fmt.Errorf("plugin: invalid plugin name (from option, %s or executable name): %w", api.PluginNameEnv, err)
	}
	if idx == "" {
		return fmt.Errorf("plugin %q: no plugin index: use WithPluginIdx, set %s, or name the executable NN-%s", name, api.PluginIdxEnv, name)
	}
	if err := api.ValidatePluginIndex(idx); err != nil {
		return fmt.Errorf("plugin %q: invalid plugin index (from option, %s or executable name): %w", name, api.PluginIdxEnv, err)
	}
	s.name, s.idx = name, idx
	return nil
}

// Name returns the plugin's full name, "NN-name".
func (s *Stub) Name() string { return api.FullPluginName(s.idx, s.name) }

// Start connects to the runtime, registers and waits until the runtime has
// configured the plugin. It fails if the plugin is already connected, and
// with a [*NoNetworkExtensionError] when the stub was built with
// WithRequiredNetworkExtension and the runtime lacks the pod network
// extension. The connection then lives until the runtime closes it, Stop
// is called, or a transport error occurs; ctx only bounds the handshake.
func (s *Stub) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.sess != nil && !s.sess.isDone() {
		s.mu.Unlock()
		return fmt.Errorf("plugin %q: already started", s.Name())
	}
	s.mu.Unlock()

	conn, err := s.connect(ctx)
	if err != nil {
		return fmt.Errorf("plugin %q: connecting to runtime: %w", s.Name(), err)
	}
	sess, err := newSession(s, conn)
	if err != nil {
		conn.Close()
		return fmt.Errorf("plugin %q: %w", s.Name(), err)
	}
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
	if err := sess.handshake(ctx); err != nil {
		sess.close(err)
		sess.wait()
		if refused := (*NoNetworkExtensionError)(nil); errors.As(err, &refused) {
			return refused // names the plugin already
		}
		return fmt.Errorf("plugin %q: %w", s.Name(), err)
	}
	return nil
}

// Run starts the stub and serves the runtime until the connection ends,
// ctx is cancelled or Stop is called. Without WithReconnect it returns the
// reason the connection ended, or why it could not be made; nil if it was
// ended through ctx or the runtime shut the plugin down. With
// WithReconnect it does not return when the connection ends but connects
// again (see WithReconnect), and returns nil once ctx is cancelled. In
// both cases a plugin built with WithRequiredNetworkExtension that refused
// the runtime makes Run return the [*NoNetworkExtensionError] at once.
// After Stop it returns ErrStopped. In every case the current connection is
// closed and the stub's goroutines, the on-close callback included, have
// finished when it returns. Run may not be called again before it
// returned.
func (s *Stub) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	if s.runCancel != nil {
		s.mu.Unlock()
		return fmt.Errorf("plugin %q: already running", s.Name())
	}
	s.runCancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.runCancel = nil
		s.mu.Unlock()
	}()

	if s.reconnects() {
		return s.runLoop(ctx)
	}
	if err := s.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return runEnd(ctx)
		}
		return err
	}
	err := s.serve(ctx, s.session())
	if ctx.Err() != nil {
		return runEnd(ctx)
	}
	if errors.Is(err, ErrShutdown) {
		return nil
	}
	return err
}

// Wait blocks until the current connection ends and the WithOnClose
// callback, if any, has returned, and returns why the connection ended.
func (s *Stub) Wait() error {
	sess := s.session()
	if sess == nil {
		return ErrNotStarted
	}
	return sess.wait()
}

// Done returns a channel that is closed when the current connection to the
// runtime has ended, and a closed channel when the stub has no connection.
// Unlike Wait, it does not wait for the goroutines that served the
// connection nor for the WithOnClose callback, so the callback may use it.
func (s *Stub) Done() <-chan struct{} {
	if sess := s.session(); sess != nil {
		return sess.done
	}
	c := make(chan struct{})
	close(c)
	return c
}

// Stop closes the connection to the runtime and waits for the goroutines
// that served it. It does not wait for the WithOnClose callback, so that
// the callback may call Stop; Wait and Run wait for the callback too.
//
// Stop also ends Run, which then returns ErrStopped, even while Run waits
// to reconnect.
func (s *Stub) Stop() {
	s.mu.Lock()
	cancel, sess := s.runCancel, s.sess
	s.mu.Unlock()
	if cancel != nil {
		cancel(ErrStopped)
	}
	if sess != nil {
		sess.close(ErrStopped)
		sess.waitServing()
	}
}

func (s *Stub) session() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// UpdateContainers asks the runtime to apply updates to containers outside
// any lifecycle request. It returns the updates the runtime could not apply.
// Without a deadline on ctx the request timeout from Configure applies.
func (s *Stub) UpdateContainers(ctx context.Context, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	sess := s.session()
	if sess == nil || sess.isDone() {
		return nil, fmt.Errorf("plugin %q: UpdateContainers: %w", s.Name(), ErrNotStarted)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sess.requestTimeout())
		defer cancel()
	}
	rsp := &api.UpdateContainersResponse{}
	err := api.Call(ctx, sess.client, api.RuntimeServiceName, "UpdateContainers", &api.UpdateContainersRequest{Update: updates, Evict: evictions}, rsp)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: UpdateContainers: %w", s.Name(), err)
	}
	return rsp.GetFailed(), nil
}

// RuntimeInfo describes the runtime a connected stub was configured by.
type RuntimeInfo struct {
	Name, Version       string
	NRIVersion          string
	RegistrationTimeout time.Duration
	RequestTimeout      time.Duration
	// Events is the subscription the plugin answered Configure with.
	Events api.EventMask
	// NetworkExtension is the version of the pod network extension the
	// runtime supports, 0 if none: then networks the plugin returns are
	// dropped and PodSandboxStatus is never called.
	NetworkExtension uint32
}

// Runtime returns what the runtime said in Configure, and false if the stub
// has not been configured yet.
func (s *Stub) Runtime() (RuntimeInfo, bool) {
	sess := s.session()
	if sess == nil {
		return RuntimeInfo{}, false
	}
	return sess.runtimeInfo()
}

// Ready reports whether the plugin is, right now, connected to the runtime
// and configured by it (registered, and its Configure answered without
// error), and if not, why, naming the plugin:
//
//	plugin "10-podnet": not connected to the runtime yet
//	plugin "10-podnet": connected, waiting for the runtime's Configure
//	plugin "10-podnet": not connected to the runtime: connection to runtime lost: ...
//
// It turns false as soon as the connection ends, and true again once a new
// connection (see WithReconnect) has been configured. It does not wait
// for Synchronize, which the runtime sends right after Configure. It is
// cheap and safe for concurrent use, meant for a readiness probe (its
// shape is that of cmd/internal/health's Check).
func (s *Stub) Ready() (bool, string) {
	sess := s.session()
	if sess == nil {
		return false, fmt.Sprintf("plugin %q: not connected to the runtime yet", s.Name())
	}
	// close sets err before it closes done: once done is seen closed,
	// err is there.
	done := sess.isDone()
	sess.mu.Lock()
	configured, err := sess.isConfig, sess.err
	sess.mu.Unlock()
	switch {
	case done:
		return false, fmt.Sprintf("plugin %q: not connected to the runtime: %v", s.Name(), err)
	case !configured:
		return false, fmt.Sprintf("plugin %q: connected, waiting for the runtime's Configure", s.Name())
	}
	return true, ""
}

// configuringKey is the context key under which a ConfigureHandler finds
// the runtime's Configure request as a RuntimeInfo.
type configuringKey struct{}

// RuntimeInfoFromContext returns, in a ConfigureHandler, what the runtime
// says in the Configure request being handled: its name and version, NRI
// version, timeouts and pod network extension. Events is zero, the
// subscription being what the handler is to answer. It returns false for
// a context that did not come with a Configure request. Stub.Runtime
// gives the same once the plugin is configured.
func RuntimeInfoFromContext(ctx context.Context) (RuntimeInfo, bool) {
	info, ok := ctx.Value(configuringKey{}).(RuntimeInfo)
	return info, ok
}

// UpdatePodSandboxNetwork tells the runtime that this plugin's part of a
// pod's network changed. The runtime validates and merges it like a
// RunPodSandbox result and persists it; a conflict with another plugin's
// part is returned as an error. An empty or nil network is refused (see
// WithdrawPodSandboxNetwork). It fails with ErrNoNetworkExtension when
// the runtime does not support the pod network extension.
func (s *Stub) UpdatePodSandboxNetwork(ctx context.Context, podID string, network *api.PodSandboxNetwork) error {
	return s.updateNetwork(ctx, "UpdatePodSandboxNetwork", &api.UpdatePodSandboxNetworkRequest{PodId: podID, Network: network})
}

// WithdrawPodSandboxNetwork tells the runtime that this plugin no longer
// provides any part of a pod's network: the runtime removes the plugin's
// part (its addresses, interfaces, routes, DNS and info) from the pod's
// record. An empty UpdatePodSandboxNetwork is refused instead, so that a
// plugin cannot erase its part by mistake.
func (s *Stub) WithdrawPodSandboxNetwork(ctx context.Context, podID string) error {
	return s.updateNetwork(ctx, "WithdrawPodSandboxNetwork", &api.UpdatePodSandboxNetworkRequest{PodId: podID, Withdraw: true})
}

// updateNetwork sends an UpdatePodSandboxNetwork request.
func (s *Stub) updateNetwork(ctx context.Context, what string, req *api.UpdatePodSandboxNetworkRequest) error {
	sess := s.session()
	if sess == nil || sess.isDone() {
		return fmt.Errorf("plugin %q: %s: %w", s.Name(), what, ErrNotStarted)
	}
	if info, _ := sess.runtimeInfo(); info.NetworkExtension == 0 {
		return fmt.Errorf("plugin %q: %s: %w", s.Name(), what, ErrNoNetworkExtension)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sess.requestTimeout())
		defer cancel()
	}
	err := api.Call(ctx, sess.client, api.RuntimeServiceName, "UpdatePodSandboxNetwork", req, &api.UpdatePodSandboxNetworkResponse{})
	if err != nil {
		return fmt.Errorf("plugin %q: %s of pod %q: %w", s.Name(), what, req.GetPodId(), err)
	}
	return nil
}

// implementsNetwork reports whether the plugin has a pod network handler.
func (s *Stub) implementsNetwork() bool {
	_, run := s.handler.(RunPodSandboxNetworkHandler)
	_, st := s.handler.(PodSandboxStatusHandler)
	return run || st
}

// oneVariant refuses a handler implementing two variants of one event:
// only one of them could be called.
func oneVariant(handler any) error {
	for _, v := range []struct {
		a, b string
		both bool
	}{
		{"RunPodSandbox", "RunPodSandboxNetwork", implements[RunPodSandboxHandler](handler) && implements[RunPodSandboxNetworkHandler](handler)},
		{"CreateContainer", "CreateContainerEvict", implements[CreateContainerHandler](handler) && implements[CreateContainerEvictHandler](handler)},
		{"UpdateContainer", "UpdateContainerEvict", implements[UpdateContainerHandler](handler) && implements[UpdateContainerEvictHandler](handler)},
	} {
		if v.both {
			return fmt.Errorf("plugin: %T implements both %s and %s; implement one", handler, v.a, v.b)
		}
	}
	return nil
}

func implements[I any](h any) bool {
	_, ok := h.(I)
	return ok
}
