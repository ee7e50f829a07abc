package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/mux"
)

// Plugin kinds, as shown in logs and PluginInfo.
const (
	kindExternal     = "external"
	kindLaunched     = "launched"
	kindPreConnected = "pre-connected"
)

// plugin is the runtime's end of one plugin connection.
type plugin struct {
	r        *Runtime
	kind     string
	config   string // sent in Configure; launched plugins only
	pid      int
	cmd      *exec.Cmd     // launched plugins only
	restarts int           // launched plugins: earlier incarnations
	exited   chan struct{} // closed when cmd has been waited for

	mux    *mux.Mux
	rl     net.Listener // runtime service conn, for the ttrpc server
	client *ttrpc.Client
	server *ttrpc.Server

	inflight chan struct{} // one token per request the plugin has in flight
	// netExt is the version of the pod network extension the plugin
	// answered Configure with; 0 for a plugin without it, which is sent
	// pods without the extension's fields (view.go).
	netExt     atomic.Uint32
	registered chan struct{} // closed by a valid RegisterPlugin
	done       chan struct{} // closed when the connection is closed
	closeOnce  sync.Once

	mu sync.Mutex // guards the fields below

	// idx and name are set under mu before registered is closed (for
	// launched plugins at creation) and never change afterwards, so
	// fullName may read them without the lock once registered is closed.
	idx, name    string
	full         string // "NN-name", once idx and name are set
	isRegistered bool
	log          *slog.Logger
	events       api.EventMask
	policy       *api.FailurePolicy
	fallback     api.EventMask // events delivered through StateChange
	closeErr     error
	// staleWarned is when the plugin's failing status answers were last
	// reported at warning level; staleSuppressed counts those since.
	staleWarned     time.Time
	staleSuppressed int
}

// newPlugin sets up the multiplexer and both ttrpc ends on conn.
func (r *Runtime) newPlugin(conn net.Conn, kind, idx, name string) (*plugin, error) {
	p := &plugin{
		r:          r,
		kind:       kind,
		idx:        idx,
		name:       name,
		full:       api.FullPluginName(idx, name),
		registered: make(chan struct{}),
		done:       make(chan struct{}),
		exited:     make(chan struct{}),
	}
	if kind == kindExternal {
		p.pid = peerPid(conn)
	}
	p.log = r.log.With("plugin", p.labelLocked())
	// A plugin that stops reading must not block the runtime's writes for
	// ever: a frame that cannot be written within the request timeout
	// breaks the connection.
	m, err := mux.New(conn, mux.WithWriteTimeout(r.cfg.requestTimeout))
	if err != nil {
		return nil, err
	}
	pc, err := m.Open(mux.PluginServiceConn)
	if err != nil {
		return nil, err
	}
	l, err := m.Listen(mux.RuntimeServiceConn)
	if err != nil {
		return nil, err
	}
	server, err := ttrpc.NewServer(append(slices.Clone(r.cfg.ttrpcServerOpts), ttrpc.WithChainUnaryServerInterceptor(p.limitRequests))...)
	if err != nil {
		return nil, err
	}
	p.inflight = make(chan struct{}, maxPluginRequests)
	p.mux, p.server, p.rl = m, server, l
	api.RegisterFastRuntimeService(server, &runtimeService{p: p})
	p.client = ttrpc.NewClient(pc, append(slices.Clone(r.cfg.ttrpcClientOpts), ttrpc.WithOnClose(func() {
		p.close(p.connError())
	}))...)
	return p, nil
}

// start starts the runtime service and the reader, on goroutines Stop
// waits for; once the Runtime is stopping it closes the connection
// instead.
func (p *plugin) start() {
	if !p.r.track() {
		p.close(ErrClosed)
		return
	}
	go func() {
		defer p.r.wg.Done()
		err := p.server.Serve(p.r.ctx, p.rl)
		switch {
		case err == nil || errors.Is(err, ttrpc.ErrServerClosed):
		case p.mux.Err() != nil:
			p.close(p.connError()) // the trunk broke: report why
		default:
			p.close(fmt.Errorf("serving runtime service: %w", err))
		}
	}()
	if !p.r.track() {
		p.close(ErrClosed)
		return
	}
	go func() {
		defer p.r.wg.Done()
		select {
		case <-p.mux.Done():
			p.close(p.connError())
		case <-p.done:
		}
	}()
	p.mux.Start()
}

// label names the plugin in logs: "NN-name" once known, else its kind and
// process id.
func (p *plugin) label() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.labelLocked()
}

func (p *plugin) labelLocked() string {
	if p.name != "" {
		return api.FullPluginName(p.idx, p.name)
	}
	if p.pid > 0 {
		return fmt.Sprintf("unregistered %s plugin (pid %d)", p.kind, p.pid)
	}
	return fmt.Sprintf("unregistered %s plugin", p.kind)
}

// mayShareName reports whether p and q may be connected under one name at
// the same time: only if neither took the pod network extension. A pod's
// network parts, its record's owners and network pushes go by plugin
// name, so a plugin that took the extension holds its name alone. Plugins
// without it have no part in pod networks (they may not return, push or
// report one) and may share a name, as on upstream NRI, whose runtime
// keeps every connection: containerd's own integration tests leave a
// plugin of one name connected from each test.
func (p *plugin) mayShareName(q *plugin) bool {
	return p.netExt.Load() == 0 && q.netExt.Load() == 0
}

// fullName is the plugin's "NN-name". It may be called without the lock
// only once the plugin has registered.
func (p *plugin) fullName() string { return p.full }

func (p *plugin) logger() *slog.Logger {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log
}

func (p *plugin) info() PluginInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PluginInfo{Name: p.fullName(), Index: p.idx, Kind: p.kind, Pid: p.pid, Events: p.events, Restarts: p.restarts}
}

func (p *plugin) isClosed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// connError describes why the connection ended.
func (p *plugin) connError() error {
	if err := p.mux.Err(); err != nil && !errors.Is(err, mux.ErrClosed) {
		return fmt.Errorf("connection lost: %w", err)
	}
	return errors.New("connection closed")
}

// close closes the connection once, logging why. Unless reason is
// ErrClosed (an orderly stop), a launched plugin's process is killed.
func (p *plugin) close(reason error) {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closeErr = reason
		log := p.log
		p.mu.Unlock()
		close(p.done)
		p.client.Close()
		p.server.Close()
		p.mux.Close()
		if !errors.Is(reason, ErrClosed) {
			log.Warn("plugin disconnected", "reason", reason)
		}
		p.r.drop(p)
		if !errors.Is(reason, ErrClosed) {
			p.kill()
		}
	})
}

// shutdown sends Shutdown (bounded by the request timeout and ctx), closes
// the connection and gives a launched plugin until ctx ends to exit.
func (p *plugin) shutdown(ctx context.Context) {
	if !p.isClosed() {
		// Through invoke, so that a plugin that stopped reading cannot
		// hold Stop past its context.
		_, err := p.invokeTracked(ctx, "Shutdown", p.r.cfg.requestTimeout, func(ctx context.Context, p *plugin) error {
			_, err := rpc[api.Empty](ctx, p, "Shutdown", &api.Empty{})
			return err
		})
		if err != nil {
			p.logger().Debug("Shutdown request failed", "error", err)
		}
	}
	p.close(ErrClosed)
	if p.cmd != nil {
		select {
		case <-p.exited:
		case <-ctx.Done():
			p.kill()
		}
	}
}

// kill ends a launched plugin's process, if there is one still running.
func (p *plugin) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Kill()
	}
}

// handshake waits for registration, configures the plugin and takes it
// through Synchronize into the dispatch list (join).
func (p *plugin) handshake(ctx context.Context) error {
	r := p.r
	timer := time.NewTimer(r.cfg.registrationTimeout)
	defer timer.Stop()
	select {
	case <-p.registered:
	case <-p.done:
		return fmt.Errorf("closed before registering: %w", p.reason())
	case <-timer.C:
		return fmt.Errorf("did not register within %v", r.cfg.registrationTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := p.configure(ctx); err != nil {
		return err
	}
	updates, err := p.join(ctx)
	if err != nil {
		return err
	}
	p.applySyncUpdates(ctx, updates)
	return nil
}

func (p *plugin) reason() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closeErr == nil {
		return errors.New("connection closed")
	}
	return p.closeErr
}

// configure sends Configure and checks the subscription.
func (p *plugin) configure(ctx context.Context) error {
	r := p.r
	req := &api.ConfigureRequest{
		Config:              p.config,
		RuntimeName:         r.name,
		RuntimeVersion:      r.version,
		RegistrationTimeout: r.cfg.registrationTimeout.Milliseconds(),
		RequestTimeout:      r.cfg.requestTimeout.Milliseconds(),
		NRIVersion:          r.cfg.nriVersion,
	}
	if !r.cfg.noNetExtension {
		req.NetworkExtension = &api.NetworkExtension{Version: api.NetworkExtensionVersion}
	}
	var rsp *api.ConfigureResponse
	_, err := p.invoke(ctx, "Configure", r.cfg.requestTimeout, func(ctx context.Context, p *plugin) error {
		var err error
		rsp, err = rpc[api.ConfigureResponse](ctx, p, "Configure", req)
		return err
	})
	if err != nil {
		return &PluginError{Plugin: p.fullName(), Method: "Configure", Err: err}
	}
	events := api.EventMask(rsp.GetEvents())
	if events == 0 {
		// Upstream compatibility: an empty mask subscribes to every event
		// of NRI v0.12.5; the network extension's must be asked for.
		events = api.ClassicEvents
	}
	if err := events.Validate(); err != nil {
		return fmt.Errorf("plugin %q: Configure: subscribed to invalid events: %w", p.fullName(), err)
	}
	if r.cfg.noNetExtension && events.IsSet(api.Event_POD_SANDBOX_STATUS) {
		return fmt.Errorf("plugin %q: Configure: subscribed to PodSandboxStatus, which this runtime does not offer (no pod network extension)", p.fullName())
	}
	p.mu.Lock()
	p.events = events
	p.policy = rsp.GetFailurePolicy()
	p.mu.Unlock()
	p.netExt.Store(rsp.GetNetworkExtension().GetVersion())
	return nil
}

// maxPluginRequests bounds the requests (RegisterPlugin, UpdateContainers)
// one plugin may have in flight; ttrpc runs each on its own goroutine, so a
// flood would otherwise cost a goroutine and a buffer per request.
const maxPluginRequests = 16

// limitRequests refuses a plugin's request beyond maxPluginRequests in
// flight with RESOURCE_EXHAUSTED.
func (p *plugin) limitRequests(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	select {
	case p.inflight <- struct{}{}:
		defer func() { <-p.inflight }()
		return method(ctx, unmarshal)
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "%s: more than %d requests in flight", info.FullMethod, maxPluginRequests)
	}
}

// runtimeService serves the Runtime ttrpc service for one plugin.
type runtimeService struct {
	p *plugin
}

var _ api.RuntimeService = (*runtimeService)(nil)

func (s *runtimeService) RegisterPlugin(ctx context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	p := s.p
	// ttrpc runs each request on its own goroutine: decide under the lock,
	// so that two concurrent registrations cannot both succeed.
	p.mu.Lock()
	if p.isRegistered {
		p.mu.Unlock()
		return nil, fmt.Errorf("plugin %q is already registered", api.FullPluginName(p.idx, p.name))
	}
	if p.kind == kindLaunched {
		if req.GetPluginName() != p.name || req.GetPluginIdx() != p.idx {
			p.log.Debug("launched plugin registered under another name; keeping the file name",
				"registeredName", req.GetPluginName(), "registeredIdx", req.GetPluginIdx())
		}
	} else {
		err := api.ValidatePluginName(req.GetPluginName())
		if err == nil {
			err = api.ValidatePluginIndex(req.GetPluginIdx())
		}
		if err != nil {
			err = fmt.Errorf("registration refused for %s: %w", p.labelLocked(), err)
			p.mu.Unlock()
			// Close after the reply is written (upstream leaves such
			// connections open forever), on a goroutine Stop waits for.
			if p.r.track() {
				go func() {
					defer p.r.wg.Done()
					t := time.NewTimer(100 * time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
					case <-p.r.ctx.Done():
					}
					p.close(err)
				}()
			} else {
				p.close(err)
			}
			return nil, err
		}
		p.idx, p.name = req.GetPluginIdx(), req.GetPluginName()
		p.full = api.FullPluginName(p.idx, p.name)
	}
	p.isRegistered = true
	p.log = p.r.log.With("plugin", api.FullPluginName(p.idx, p.name))
	log := p.log
	p.mu.Unlock()
	log.Info("plugin registered", "kind", p.kind, "pid", p.pid, "nriVersion", req.GetNRIVersion())
	close(p.registered)
	return &api.Empty{}, nil
}

func (s *runtimeService) UpdatePodSandboxNetwork(ctx context.Context, req *api.UpdatePodSandboxNetworkRequest) (*api.UpdatePodSandboxNetworkResponse, error) {
	p := s.p
	select {
	case <-p.registered:
	default:
		return nil, fmt.Errorf("%s: UpdatePodSandboxNetwork before RegisterPlugin", p.label())
	}
	if err := p.mayAct("UpdatePodSandboxNetwork"); err != nil {
		return nil, err
	}
	if err := p.r.updatePodNetwork(ctx, p, req); err != nil {
		p.logger().Warn("UpdatePodSandboxNetwork refused", "sandbox", req.GetPodId(), "error", err)
		return nil, err
	}
	return &api.UpdatePodSandboxNetworkResponse{}, nil
}

func (s *runtimeService) UpdateContainers(ctx context.Context, req *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	p := s.p
	select {
	case <-p.registered:
	default:
		return nil, fmt.Errorf("%s: UpdateContainers before RegisterPlugin", p.label())
	}
	if err := p.mayAct("UpdateContainers"); err != nil {
		return nil, err
	}
	r := p.r
	switch {
	case len(req.GetUpdate()) > 0 && r.cfg.update == nil:
		return nil, fmt.Errorf("runtime %s does not accept container updates from plugin %q", r.name, p.fullName())
	case len(req.GetEvict()) > 0 && r.cfg.evict == nil:
		p.logger().Warn("plugin asked to evict containers, but the runtime has no EvictFunc", "evictions", describeEvictions(req.GetEvict()))
		return nil, fmt.Errorf("evicting %v: %w", describeEvictions(req.GetEvict()), errNoEvictFunc)
	}
	var failed []*api.ContainerUpdate
	if len(req.GetUpdate()) > 0 {
		var err error
		if failed, err = r.cfg.update(ctx, p.fullName(), req.GetUpdate()); err != nil {
			p.logger().Warn("applying container updates failed", "updates", len(req.GetUpdate()), "error", err)
			return nil, err
		}
	}
	if len(req.GetEvict()) > 0 {
		// Delivered on the runtime's own goroutine: a plugin may ask from
		// inside one of its handlers, and an EvictFunc that calls back into
		// the runtime must not wait for that handler's request to end.
		r.goEvict(p.fullName(), req.GetEvict())
	}
	return &api.UpdateContainersResponse{Failed: failed}, nil
}

// rpc calls a method of the plugin's Plugin service, encoding and decoding
// with the fast codec. req is sent as the plugin may see it (view).
func rpc[Rsp any, PRsp interface {
	*Rsp
	api.VTMessage
}](ctx context.Context, p *plugin, method string, req api.VTMessage) (PRsp, error) {
	rsp := PRsp(new(Rsp))
	if err := api.Call(ctx, p.client, api.PluginServiceName, method, p.view(req), rsp); err != nil {
		return nil, err
	}
	return rsp, nil
}

// mayAct reports whether the plugin may change pods and containers with
// method: only a connection that has joined, or is joining under a name no
// connected plugin holds, or may share (a plugin may ask from its
// Synchronize handler). A second connection registered under a connected
// plugin's name, which will be refused when it tries to join, may not act
// in its name.
func (p *plugin) mayAct(method string) error {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.plugins, p) {
		return nil
	}
	if _, joining := r.joining[p]; joining {
		if !slices.ContainsFunc(r.plugins, func(q *plugin) bool {
			return q.fullName() == p.fullName() && !q.isClosed() && !p.mayShareName(q)
		}) {
			return nil
		}
		return fmt.Errorf("plugin %q: %s refused: another connection of that name is connected", p.fullName(), method)
	}
	return fmt.Errorf("plugin %q: %s refused: the connection has not joined", p.fullName(), method)
}
