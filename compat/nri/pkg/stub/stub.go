package stub

import (
	"context"
	"errors"
	"fmt"
	stdnet "net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"

	"github.com/containerd/nri/internal/slogbridge"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
)

// Stub connects a plugin to the runtime and relays the runtime's requests
// to it.
type Stub interface {
	// Run starts the plugin (see Start) and serves the runtime until the
	// connection ends, Stop is called or ctx is cancelled. It returns
	// ctx.Err() once ctx is cancelled, nil if the runtime shut the plugin
	// down, and otherwise why the connection ended (plugin.ErrStopped
	// after Stop). The stub can be started again afterwards.
	Run(context.Context) error
	// Start connects to the runtime, registers the plugin and returns once
	// the runtime configured it, or with the reason it did not.
	Start(context.Context) error
	// Stop closes the connection to the runtime.
	Stop()
	// Wait returns when the connection to the runtime has ended; at once
	// if the stub is not connected.
	Wait()

	// UpdateContainers asks the runtime to update containers outside any
	// lifecycle request and returns the updates that failed. It fails
	// with ErrNoService when the stub is not connected.
	UpdateContainers([]*api.ContainerUpdate) ([]*api.ContainerUpdate, error)

	// RegistrationTimeout returns the registration timeout the runtime
	// gave in Configure, DefaultRegistrationTimeout before that.
	RegistrationTimeout() time.Duration
	// RequestTimeout returns the request timeout the runtime gave in
	// Configure, DefaultRequestTimeout before that.
	RequestTimeout() time.Duration

	// Logger returns the logger of the stub.
	Logger() nrilog.Logger

	// RuntimeNRIVersion returns the NRI version the runtime reported in
	// Configure, or inferred from its name and version if it reported
	// none; "unknown" before Configure.
	RuntimeNRIVersion() string
	// PluginNRIVersion returns the NRI version the stub registers with:
	// the containerd/nri release whose protocol nrinet implements.
	PluginNRIVersion() string
}

// Default timeouts, in effect until the runtime configures the plugin.
const (
	// DefaultRegistrationTimeout is the default registration timeout.
	DefaultRegistrationTimeout = api.DefaultPluginRegistrationTimeout
	// DefaultRequestTimeout is the default request timeout.
	DefaultRequestTimeout = api.DefaultPluginRequestTimeout
)

// ErrNoService is the error of UpdateContainers on a stub that is not
// connected to a runtime.
var ErrNoService = errors.New("stub: no service/connection")

// EventMask is a set of events; its Set and Clear modify it in place.
type EventMask = api.EventMask

// stub implements Stub on nrinet's plugin library: inner serves an
// adapter that relays to the plugin.
type stub struct {
	plugin  Plugin
	handled api.EventMask // the events the plugin has an interface for
	inner   *plugin.Stub

	// Set by the options, read in New.
	pluginName, pluginIdx string
	socketPath            string
	conn                  stdnet.Conn
	dialer                func(string) (stdnet.Conn, error)
	onClose               func()
	clientOpts            []ttrpc.ClientOpts
	serverOpts            []ttrpc.ServerOpt
	logger                nrilog.Logger
	failurePolicy         *api.FailurePolicy

	mu                  sync.Mutex // guards the fields below
	registrationTimeout time.Duration
	requestTimeout      time.Duration
	runtimeNRIVersion   string
}

// New returns a stub for p, which must implement at least one of the event
// interfaces of this package (RunPodInterface, ...); the stub subscribes
// it to those events, or to the subset its Configure returns. The plugin's
// name and index come from the options, else from NRI_PLUGIN_NAME and
// NRI_PLUGIN_IDX, else from an executable named "NN-name".
func New(p interface{}, opts ...Option) (Stub, error) {
	s := &stub{
		plugin:              p,
		handled:             handledEvents(p),
		logger:              nrilog.Get(),
		registrationTimeout: DefaultRegistrationTimeout,
		requestTimeout:      DefaultRequestTimeout,
		runtimeNRIVersion:   "unknown",
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if s.handled == 0 {
		return nil, fmt.Errorf("stub: plugin %T implements no NRI event handler interface: %w", p, plugin.ErrNoHandlers)
	}
	inner, err := plugin.New(adapter{s}, s.innerOptions()...)
	if err != nil {
		return nil, fmt.Errorf("stub: %w", err)
	}
	s.inner = inner
	s.logger.Infof(context.TODO(), "Created plugin %s (%s, handles %s)", s.name(), filepath.Base(os.Args[0]), s.handled.PrettyString())
	return s, nil
}

// innerOptions translates the options given to New into plugin.Options.
func (s *stub) innerOptions() []plugin.Option {
	opts := []plugin.Option{
		plugin.WithLogger(slogbridge.New(func() nrilog.Logger { return s.logger })),
		plugin.WithTTRPCOptions(s.clientOpts, s.serverOpts),
		// As upstream's stub: the plugin has no way to return a pod
		// network, so it answers Configure without the extension, and
		// may share its name with other such plugins.
		plugin.WithoutNetworkExtension(),
	}
	if s.pluginName != "" {
		opts = append(opts, plugin.WithPluginName(s.pluginName))
	}
	if s.pluginIdx != "" {
		opts = append(opts, plugin.WithPluginIdx(s.pluginIdx))
	}
	if s.socketPath != "" {
		opts = append(opts, plugin.WithSocketPath(s.socketPath))
	}
	if s.conn != nil {
		opts = append(opts, plugin.WithConnection(s.conn))
	}
	if d := s.dialer; d != nil {
		opts = append(opts, plugin.WithDialer(func(_ context.Context, path string) (stdnet.Conn, error) { return d(path) }))
	}
	if fn := s.onClose; fn != nil {
		opts = append(opts, plugin.WithOnClose(func(error) { fn() }))
	}
	if s.failurePolicy != nil {
		opts = append(opts, plugin.WithFailurePolicy(s.failurePolicy))
	}
	return opts
}

// name returns the plugin's full name, "NN-name".
func (s *stub) name() string {
	if s.inner == nil {
		return s.pluginIdx + "-" + s.pluginName
	}
	return s.inner.Name()
}

func (s *stub) Start(ctx context.Context) error {
	if err := s.inner.Start(ctx); err != nil {
		return err
	}
	s.logger.Infof(ctx, "Started plugin %s...", s.name())
	return nil
}

func (s *stub) Run(ctx context.Context) error {
	err := s.inner.Run(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (s *stub) Stop() {
	s.logger.Infof(context.TODO(), "Stopping plugin %s...", s.name())
	s.inner.Stop()
}

func (s *stub) Wait() { <-s.inner.Done() }

func (s *stub) UpdateContainers(update []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	failed, err := s.inner.UpdateContainers(context.Background(), update, nil)
	if errors.Is(err, plugin.ErrNotStarted) {
		return nil, fmt.Errorf("stub: plugin %s: UpdateContainers: %w", s.name(), ErrNoService)
	}
	return failed, err
}

func (s *stub) RegistrationTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registrationTimeout
}

func (s *stub) RequestTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requestTimeout
}

func (s *stub) Logger() nrilog.Logger { return s.logger }

func (s *stub) RuntimeNRIVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runtimeNRIVersion
}

func (s *stub) PluginNRIVersion() string { return nrinet.Version }
