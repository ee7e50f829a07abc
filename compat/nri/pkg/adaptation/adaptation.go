package adaptation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/containerd/nri/internal/slogbridge"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/log"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"

	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

const (
	// DefaultPluginPath is the directory of pre-installed plugins.
	DefaultPluginPath = "/opt/nri/plugins"
	// DefaultSocketPath is the socket external plugins connect to.
	DefaultSocketPath = api.DefaultSocketPath
	// DefaultPluginConfigPath is the directory of pre-installed plugins'
	// configurations.
	DefaultPluginConfigPath = "/etc/nri/conf.d"
)

// SyncFn is the runtime's function that synchronizes a joining plugin:
// it lists the runtime's pods and containers, holding what it must hold
// so that they do not change unseen, passes them to the SyncCB, and
// applies the container updates it returns.
type SyncFn func(context.Context, SyncCB) error

// SyncCB synchronizes a plugin with the pods and containers given and
// returns the container updates the plugin asked for.
type SyncCB func(context.Context, []*PodSandbox, []*Container) ([]*ContainerUpdate, error)

// UpdateFn is the runtime's function that applies container updates a
// plugin asked for outside a request; it returns those it could not apply.
type UpdateFn func(context.Context, []*ContainerUpdate) ([]*ContainerUpdate, error)

// ErrWasmDisabled is upstream's error for a runtime built without WASM
// support. nrinet never runs WASM plugins: see the package documentation.
var ErrWasmDisabled = errors.New("WASM support is disabled (at build time)")

// Adaptation is the NRI runtime of a container runtime.
type Adaptation struct {
	name, version string
	nriVersion    string
	syncFn        SyncFn
	updateFn      UpdateFn
	pluginPath    string
	dropinPath    string
	socketPath    string
	dontListen    bool
	clientOpts    []ttrpc.ClientOpts
	serverOpts    []ttrpc.ServerOpt
	builtin       []*builtin.BuiltinPlugin
	metrics       Metrics
	deprecation   DeprecationRecorder

	mu       sync.Mutex // guards the fields below
	rt       *runtime.Runtime
	builtins []*builtinPlugin
	// Set by EnablePodNetworks, before Start.
	podNetworks     bool
	netStore        PodNetworkStore
	requiredNetwork []string
}

// Option configures an Adaptation.
type Option func(*Adaptation) error

// WithPluginPath sets the directory of pre-installed plugins (default
// DefaultPluginPath).
func WithPluginPath(path string) Option {
	return func(r *Adaptation) error {
		r.pluginPath = path
		return nil
	}
}

// WithPluginConfigPath sets the directory of pre-installed plugins'
// configurations (default DefaultPluginConfigPath).
func WithPluginConfigPath(path string) Option {
	return func(r *Adaptation) error {
		r.dropinPath = path
		return nil
	}
}

// WithSocketPath sets the socket external plugins connect to (default
// DefaultSocketPath).
func WithSocketPath(path string) Option {
	return func(r *Adaptation) error {
		r.socketPath = path
		return nil
	}
}

// WithDisabledExternalConnections makes the runtime not listen for
// external plugins.
func WithDisabledExternalConnections() Option {
	return func(r *Adaptation) error {
		r.dontListen = true
		return nil
	}
}

// WithTTRPCOptions adds options to the ttrpc client and server of every
// plugin connection.
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return func(r *Adaptation) error {
		r.clientOpts = append(r.clientOpts, clientOpts...)
		r.serverOpts = append(r.serverOpts, serverOpts...)
		return nil
	}
}

// WithBuiltinPlugins adds plugins that run inside the runtime's process.
func WithBuiltinPlugins(plugins ...*builtin.BuiltinPlugin) Option {
	return func(r *Adaptation) error {
		r.builtin = append(r.builtin, plugins...)
		return nil
	}
}

// WithMetrics sets the Metrics the runtime reports plugin activity to.
func WithMetrics(m Metrics) Option {
	return func(r *Adaptation) error {
		if m != nil {
			r.metrics = m
		}
		return nil
	}
}

// WithDefaultValidator adds the default validator, as a built-in plugin
// run before the others, if cfg enables it.
func WithDefaultValidator(cfg *validator.DefaultValidatorConfig) Option {
	return func(r *Adaptation) error {
		if p := validator.GetDefaultValidator(cfg); p != nil {
			r.builtin = append([]*builtin.BuiltinPlugin{p}, r.builtin...)
		}
		return nil
	}
}

// WithDeprecationRecorder sets where uses of deprecated parts of NRI by
// plugins are recorded.
func WithDeprecationRecorder(d DeprecationRecorder) Option {
	return func(r *Adaptation) error {
		r.deprecation = d
		return nil
	}
}

// New returns the NRI runtime of the container runtime name and version.
// syncFn synchronizes joining plugins, updateFn applies their unsolicited
// container updates; neither may be nil.
func New(name, version string, syncFn SyncFn, updateFn UpdateFn, opts ...Option) (*Adaptation, error) {
	if syncFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil SyncFn")
	}
	if updateFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil UpdateFn")
	}
	r := &Adaptation{
		name:       name,
		version:    version,
		nriVersion: nrinet.Version,
		syncFn:     syncFn,
		updateFn:   updateFn,
		pluginPath: DefaultPluginPath,
		dropinPath: DefaultPluginConfigPath,
		socketPath: DefaultSocketPath,
		metrics:    noopMetrics{},
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, fmt.Errorf("failed to apply option: %w", err)
		}
	}
	log.Infof(context.TODO(), "runtime interface created (nrinet)")
	return r, nil
}

// Start starts the NRI runtime: it launches the pre-installed plugins,
// connects the built-in ones, and listens for external ones. The plugin
// timeouts in effect (SetPluginRegistrationTimeout,
// SetPluginRequestTimeout) apply from then on.
func (r *Adaptation) Start() error {
	log.Infof(context.TODO(), "runtime interface starting up...")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rt != nil {
		return errors.New("NRI runtime already started")
	}
	opts := []runtime.Option{
		runtime.WithPluginPath(r.pluginPath),
		runtime.WithPluginConfigPath(r.dropinPath),
		runtime.WithRegistrationTimeout(getPluginRegistrationTimeout()),
		runtime.WithRequestTimeout(getPluginRequestTimeout()),
		runtime.WithNRIVersion(r.nriVersion),
		runtime.WithSyncCallback(func(ctx context.Context, cb runtime.SyncCB) error {
			return r.syncFn(ctx, SyncCB(cb))
		}),
		runtime.WithUpdateFunc(func(ctx context.Context, _ string, updates []*ContainerUpdate) ([]*ContainerUpdate, error) {
			return r.updateFn(ctx, updates)
		}),
		runtime.WithTTRPCOptions(r.clientOpts, r.serverOpts),
		runtime.WithObserver(&observer{metrics: r.metrics, deprecation: r.deprecation}),
		runtime.WithLogger(slogbridge.New(log.Get)),
	}
	if r.podNetworks {
		opts = append(opts, runtime.WithPodNetworkStore(r.netStore))
		if len(r.requiredNetwork) > 0 {
			opts = append(opts, runtime.WithRequiredNetworkPlugins(r.requiredNetwork...))
		}
	} else {
		opts = append(opts, runtime.WithoutNetworkExtension())
	}
	if r.dontListen {
		opts = append(opts, runtime.WithoutExternalPlugins())
	} else {
		if err := removeEmptyDir(r.socketPath); err != nil {
			return err
		}
		opts = append(opts, runtime.WithSocketPath(r.socketPath))
	}
	rt, err := runtime.New(r.name, r.version, opts...)
	if err != nil {
		return err
	}
	if err := rt.Start(context.Background()); err != nil {
		return err
	}
	r.rt = rt
	for _, b := range r.builtin {
		p, err := startBuiltin(rt, b)
		if err != nil {
			r.stopLocked()
			return fmt.Errorf("failed to start builtin NRI plugin %q: %w", b.Index+"-"+b.Base, err)
		}
		r.builtins = append(r.builtins, p)
	}
	return nil
}

// Stop stops the NRI runtime: it shuts down every plugin and stops
// listening.
func (r *Adaptation) Stop() {
	log.Infof(context.TODO(), "runtime interface shutting down...")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

// stopTimeout bounds Stop, which has no context: plugins get this long to
// exit after Shutdown before they are killed.
const stopTimeout = 10 * time.Second

func (r *Adaptation) stopLocked() {
	if r.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := r.rt.Stop(ctx); err != nil {
		log.Warnf(ctx, "stopping NRI plugins: %v", err)
	}
	for _, b := range r.builtins {
		b.stop()
	}
	r.rt, r.builtins = nil, nil
}

// runtime returns the started runtime, or an error naming the request.
func (r *Adaptation) runtime(what string) (*runtime.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rt == nil {
		return nil, fmt.Errorf("NRI %s: runtime interface not started", what)
	}
	return r.rt, nil
}

// PluginSyncBlock holds off plugins from synchronizing; see
// BlockPluginSync.
type PluginSyncBlock struct {
	b *runtime.PluginSyncBlock
}

// BlockPluginSync waits, as upstream's does, until the plugins joining now
// have joined (at most the registration and request timeouts: a join
// waiting for a block this caller already holds does not deadlock it),
// then keeps plugins that begin to join from now on from taking the
// runtime's state until Unblock: a change the runtime makes meanwhile
// reaches them in their Synchronize or as an event. It blocks no request.
func (r *Adaptation) BlockPluginSync() *PluginSyncBlock {
	rt, err := r.runtime("BlockPluginSync")
	if err != nil {
		return &PluginSyncBlock{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), getPluginRegistrationTimeout()+getPluginRequestTimeout())
	defer cancel()
	if err := rt.AwaitJoins(ctx); err != nil {
		log.Warnf(ctx, "BlockPluginSync: a plugin is still joining; going on: %v", err)
	}
	return &PluginSyncBlock{b: rt.BlockPluginSync()}
}

// Unblock lifts the block. Calls after the first do nothing.
func (b *PluginSyncBlock) Unblock() {
	if b != nil {
		b.b.Unblock()
	}
}

// removeEmptyDir removes path if it is an empty directory. Upstream's
// runtime removes whatever is at its socket path before it listens
// (os.Remove), and runtimes rely on it: CRI-O v1.36.3's server tests give
// a fresh temporary directory as the socket path. nrinet's runtime replaces
// only a stale socket, and refuses a file or a directory that holds
// something (docs/compat.md); an empty directory holds nothing to lose.
func removeEmptyDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(path)
	if err != nil || len(entries) > 0 {
		return nil // runtime.Start reports what is there
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("NRI socket path %s is an empty directory that cannot be removed: %w", path, err)
	}
	return nil
}
