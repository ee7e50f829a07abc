package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
)

// SyncFunc returns the pods and containers that exist now. A joining plugin
// receives them in Synchronize. It must list every pod and container whose
// RunPodSandbox or CreateContainer has returned successfully and that is
// not yet stopped (nrinetd lists READY pods), and may list those whose
// creation is in flight: a plugin joining meanwhile gets their creation as
// an event instead. A pod listed before its RunPodSandbox even began may
// reach a plugin that joins in that moment twice, in Synchronize and as
// RunPodSandbox.
type SyncFunc func(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error)

// SyncCB synchronizes a joining plugin with pods and containers, the
// runtime's state, and returns the container updates the plugin asked
// for, which the runtime applies. See WithSyncCallback.
type SyncCB func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error)

// UpdateFunc applies container updates that a plugin asked for outside a
// lifecycle request (UpdateContainers, or its answer to Synchronize). It
// returns the updates that could not be applied. Evictions go to the
// EvictFunc.
type UpdateFunc func(ctx context.Context, plugin string, updates []*api.ContainerUpdate) (failed []*api.ContainerUpdate, err error)

// Option configures a Runtime.
type Option func(*config) error

type config struct {
	socketPath          string
	noExternal          bool
	pluginPath          string
	pluginConfigPath    string
	registrationTimeout time.Duration
	requestTimeout      time.Duration
	syncChunkSize       int
	logger              *slog.Logger
	sync                SyncFunc
	update              UpdateFunc
	evict               EvictFunc
	validators          []builtinValidator

	netStore         PodNetworkStore
	conflictPolicy   ConflictPolicy
	familyPreference FamilyPreference
	statusTimeout    time.Duration
	statusCacheTTL   time.Duration
	// now is the status cache's clock (time.Now; tests set another).
	now             func() time.Time
	requiredNetwork []string
	noNetExtension  bool
	observer        Observer

	syncCallback    func(context.Context, SyncCB) error
	nriVersion      string
	ttrpcClientOpts []ttrpc.ClientOpts
	ttrpcServerOpts []ttrpc.ServerOpt

	restartBackoff, maxRestartBackoff time.Duration
	allowedUIDs                       []uint32 // nil: any
}

func defaultConfig() config {
	return config{
		socketPath:          api.DefaultSocketPath,
		pluginPath:          api.DefaultPluginPath,
		pluginConfigPath:    api.DefaultPluginConfigPath,
		registrationTimeout: api.DefaultRegistrationTimeout,
		requestTimeout:      api.DefaultRequestTimeout,
		syncChunkSize:       DefaultSyncChunkSize,
		statusTimeout:       DefaultStatusTimeout,
		statusCacheTTL:      DefaultStatusCacheTTL,
		now:                 time.Now,
		observer:            nopObserver{},
		restartBackoff:      DefaultRestartBackoff,
		nriVersion:          api.Version,
		maxRestartBackoff:   DefaultMaxRestartBackoff,
	}
}

// WithSocketPath sets the socket external plugins connect to (default
// api.DefaultSocketPath, "/var/run/nri/nri.sock"). Its parent directory is
// created with mode 0700 if missing; a stale socket file is replaced. The
// socket has mode 0600 whatever the process umask, so only root (the
// socket's owner) can connect; see also WithAllowedPluginUIDs.
func WithSocketPath(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("runtime: WithSocketPath: empty path")
		}
		c.socketPath = path
		return nil
	}
}

// WithoutExternalPlugins disables the socket: only pre-installed plugins
// take part.
func WithoutExternalPlugins() Option {
	return func(c *config) error {
		c.noExternal = true
		return nil
	}
}

// WithPluginPath sets the directory of pre-installed plugins (default
// api.DefaultPluginPath, "/opt/nri/plugins"); "" disables launching.
func WithPluginPath(dir string) Option {
	return func(c *config) error {
		c.pluginPath = dir
		return nil
	}
}

// WithPluginConfigPath sets the directory holding NN-name.conf or name.conf
// configuration for pre-installed plugins (default
// api.DefaultPluginConfigPath, "/etc/nri/conf.d").
func WithPluginConfigPath(dir string) Option {
	return func(c *config) error {
		c.pluginConfigPath = dir
		return nil
	}
}

// WithRegistrationTimeout sets how long a connected plugin has to register
// (default 5 s).
func WithRegistrationTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("runtime: WithRegistrationTimeout: %v is not positive", d)
		}
		c.registrationTimeout = d
		return nil
	}
}

// WithRequestTimeout sets how long a plugin has for each request
// (Configure, each Synchronize chunk, each lifecycle event; default 2 s).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("runtime: WithRequestTimeout: %v is not positive", d)
		}
		c.requestTimeout = d
		return nil
	}
}

// MaxSyncChunkSize is the largest chunk WithSyncChunkSize accepts: ttrpc's
// 4 MiB message limit less room for the request envelope.
const MaxSyncChunkSize = 4<<20 - 4<<10

// DefaultSyncChunkSize is the default for WithSyncChunkSize. Chunks of
// 1 MiB synchronize a large state faster than chunks near the 4 MiB limit
// (multi-megabyte buffers cost page faults on every copy, and the next
// chunk is encoded while the plugin decodes the previous one), and each
// chunk has its own request timeout.
const DefaultSyncChunkSize = 1 << 20

// WithSyncChunkSize sets the largest encoded SynchronizeRequest the runtime
// sends (default DefaultSyncChunkSize, at most MaxSyncChunkSize); larger
// states are split into chunks. Chunks are sized before
// sending, never by retrying a refused message.
func WithSyncChunkSize(n int) Option {
	return func(c *config) error {
		if n < 1024 || n > MaxSyncChunkSize {
			return fmt.Errorf("runtime: WithSyncChunkSize: %d is outside [1024, %d]", n, MaxSyncChunkSize)
		}
		c.syncChunkSize = n
		return nil
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("runtime: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithSyncFunc sets the function that lists existing pods and containers
// for joining plugins (default: none exist).
func WithSyncFunc(fn SyncFunc) Option {
	return func(c *config) error {
		c.sync = fn
		return nil
	}
}

// WithEvictFunc sets the function that evicts containers plugins ask to
// be evicted (default: none; evictions are then logged and refused).
func WithEvictFunc(fn EvictFunc) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("nil EvictFunc")
		}
		c.evict = fn
		return nil
	}
}

// WithValidator adds a validator built into the runtime, under name (e.g.
// "00-default-validator"), which errors give it. It validates every
// container created alongside the validating plugins, and, if it is a
// PodValidator, every pod before RunPodSandbox. It runs on the request's
// goroutine under the request timeout and must return when its context
// ends; an answer after the deadline rejects.
func WithValidator(name string, v Validator) Option {
	return func(c *config) error {
		if name == "" || v == nil {
			return errors.New("a built-in validator needs a name and a value")
		}
		for _, b := range c.validators {
			if b.name == name {
				return fmt.Errorf("validator %q added twice", name)
			}
		}
		c.validators = append(c.validators, builtinValidator{name: name, v: v})
		return nil
	}
}

// WithUpdateFunc sets the function that applies container updates plugins
// ask for outside lifecycle requests (default: such updates are refused
// with an error naming the plugin).
func WithUpdateFunc(fn UpdateFunc) Option {
	return func(c *config) error {
		c.update = fn
		return nil
	}
}

// PodNetworkStore is where the runtime keeps each pod's network record. The
// runtime library reads it to answer a plugin's UpdatePodSandboxNetwork and
// to fill pod addresses into Synchronize, and writes it when a plugin
// changed a pod's network.
type PodNetworkStore interface {
	// PodNetwork returns the pod's record: an empty record for a pod no
	// plugin has set a network for yet, nil for a host-network pod or a
	// pod whose network the runtime owns (no plugin may update it), and
	// an error for an unknown pod.
	PodNetwork(ctx context.Context, podID string) (*api.PodNetworkRecord, error)
	// SetPodNetwork persists rec as the pod's record after plugin changed
	// its part. Calls for one pod are serialized; the runtime must not
	// write a pod's record concurrently from elsewhere without the same
	// care (read the record, change it, write it back in one step).
	SetPodNetwork(ctx context.Context, podID, plugin string, rec *api.PodNetworkRecord) error
}

// Defaults of the pod network options.
const (
	DefaultStatusTimeout  = 250 * time.Millisecond
	DefaultStatusCacheTTL = time.Second
)

// WithPodNetworkStore gives the runtime library access to the pod network
// records the runtime persists (default: none; plugins then cannot push
// UpdatePodSandboxNetwork, and Synchronize carries the addresses the
// runtime's SyncFunc put in each pod).
func WithPodNetworkStore(s PodNetworkStore) Option {
	return func(c *config) error {
		c.netStore = s
		return nil
	}
}

// WithNetworkConflictPolicy says what happens when two plugins set the same
// part of a pod's network (default ConflictFail).
func WithNetworkConflictPolicy(p ConflictPolicy) Option {
	return func(c *config) error {
		if p != ConflictFail && p != ConflictAggregate {
			return fmt.Errorf("runtime: WithNetworkConflictPolicy: unknown policy %d", p)
		}
		c.conflictPolicy = p
		return nil
	}
}

// WithFamilyPreference picks the IP family of a pod's primary address
// (default PreferIPv4).
func WithFamilyPreference(p FamilyPreference) Option {
	return func(c *config) error {
		if p < PreferIPv4 || p > PreferPluginOrder {
			return fmt.Errorf("runtime: WithFamilyPreference: unknown preference %d", p)
		}
		c.familyPreference = p
		return nil
	}
}

// WithStatusTimeout bounds a PodSandboxStatus round (default 250 ms):
// plugins that have not answered by then are reported stale.
func WithStatusTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("runtime: WithStatusTimeout: %v is not positive", d)
		}
		c.statusTimeout = d
		return nil
	}
}

// WithStatusCacheTTL sets how long a non-verbose PodSandboxStatus result
// may be served again without asking the plugins (default 1 s; 0 never).
// A result expired less than 4 TTLs ago is still served at once, while one
// background round refreshes it.
func WithStatusCacheTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("runtime: WithStatusCacheTTL: %v is negative", d)
		}
		c.statusCacheTTL = d
		return nil
	}
}

// WithRequiredNetworkPlugins names the plugins that provide pod networks,
// as "NN-name" or "name". While any of them is not connected,
// RunPodSandbox of a pod that is not host-network fails at once and
// NetworkReady reports false (fail closed).
func WithRequiredNetworkPlugins(names ...string) Option {
	return func(c *config) error {
		for _, n := range names {
			base := n
			if _, name, err := api.ParsePluginFileName(n); err == nil {
				base = name
			}
			if err := api.ValidatePluginName(base); err != nil {
				return fmt.Errorf("runtime: WithRequiredNetworkPlugins: %w", err)
			}
		}
		c.requiredNetwork = append(c.requiredNetwork, names...)
		return nil
	}
}

// WithoutNetworkExtension makes the Runtime behave as one without nrinet's
// pod network extension, as an upstream NRI runtime: Configure does not
// advertise it (network plugins built on nrinet's plugin library then
// subscribe to classic events only, or refuse to join), a plugin
// subscribing to PodSandboxStatus is refused, networks in RunPodSandbox
// answers are ignored and UpdatePodSandboxNetwork is refused. For a
// runtime whose pod networks come from elsewhere (CNI). It excludes
// WithRequiredNetworkPlugins.
func WithoutNetworkExtension() Option {
	return func(c *config) error {
		c.noNetExtension = true
		return nil
	}
}

// WithRestartBackoff sets how long the Runtime waits before it launches a
// pre-installed plugin again after its process exited: min the first time
// (default DefaultRestartBackoff, 100 ms), doubling on each further exit up
// to max (default DefaultMaxRestartBackoff, 30 s), each wait jittered
// between half and all of it; an incarnation that ran for longer than max
// starts the count over.
func WithRestartBackoff(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min {
			return fmt.Errorf("runtime: WithRestartBackoff: want 0 < min <= max, got %v, %v", min, max)
		}
		c.restartBackoff, c.maxRestartBackoff = min, max
		return nil
	}
}

// WithAllowedPluginUIDs lets only processes running as one of uids connect
// to the socket as plugins, checked with the peer's credentials
// (SO_PEERCRED) before anything is read from the connection; others are
// disconnected and logged with their pid and uid. Default: any process
// that can open the socket (mode 0600: its owner). Pre-installed plugins
// are launched by the runtime and not checked.
func WithAllowedPluginUIDs(uids ...uint32) Option {
	return func(c *config) error {
		if len(uids) == 0 {
			return errors.New("runtime: WithAllowedPluginUIDs: no uid")
		}
		c.allowedUIDs = append([]uint32{}, uids...)
		return nil
	}
}

// WithSyncCallback makes the runtime, rather than the Runtime, drive a
// joining plugin's Synchronize, as containerd's NRI integration does: fn
// lists the runtime's pods and containers, holding whatever it must hold
// (its own lock, say) so that they cannot change unseen, calls cb with
// them exactly once, and applies the container updates cb returns. cb
// returns once the plugin has received them and the events that happened
// while it joined, and has joined. It replaces WithSyncFunc, and the
// updates are not given to the UpdateFunc. fn must not make lifecycle
// requests through the Runtime while cb runs for events the plugin
// subscribed to, if they could wait for the plugin (see
// docs/dev/architecture.md, joining).
func WithSyncCallback(fn func(ctx context.Context, cb SyncCB) error) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("runtime: WithSyncCallback: nil function")
		}
		c.syncCallback = fn
		return nil
	}
}

// WithTTRPCOptions adds options to the ttrpc client the Runtime calls each
// plugin with and to the ttrpc server that serves each plugin's requests
// (containerd passes OpenTelemetry interceptors). Interceptors given with
// ttrpc.WithUnaryServerInterceptor run before the Runtime's own; a client
// close callback is the Runtime's.
func WithTTRPCOptions(client []ttrpc.ClientOpts, server []ttrpc.ServerOpt) Option {
	return func(c *config) error {
		c.ttrpcClientOpts = append(c.ttrpcClientOpts, client...)
		c.ttrpcServerOpts = append(c.ttrpcServerOpts, server...)
		return nil
	}
}

// WithNRIVersion sets the NRI version the Runtime tells plugins it
// speaks, in Configure (default api.Version, the containerd/nri release
// whose protocol nrinet implements). Plugins use it to tell which
// features a runtime has.
func WithNRIVersion(v string) Option {
	return func(c *config) error {
		if v == "" {
			return errors.New("runtime: WithNRIVersion: empty version")
		}
		c.nriVersion = v
		return nil
	}
}
