package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nrinet/nrinet/api"
)

// SyncFunc returns the pods and containers that exist now. A joining plugin
// receives them in Synchronize.
type SyncFunc func(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error)

// UpdateFunc applies container updates that a plugin asked for outside a
// lifecycle request (UpdateContainers, or its answer to Synchronize). It
// returns the updates that could not be applied.
type UpdateFunc func(ctx context.Context, plugin string, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) (failed []*api.ContainerUpdate, err error)

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
}

func defaultConfig() config {
	return config{
		socketPath:          api.DefaultSocketPath,
		pluginPath:          api.DefaultPluginPath,
		pluginConfigPath:    api.DefaultPluginConfigPath,
		registrationTimeout: api.DefaultRegistrationTimeout,
		requestTimeout:      api.DefaultRequestTimeout,
		syncChunkSize:       DefaultSyncChunkSize,
	}
}

// WithSocketPath sets the socket external plugins connect to (default
// api.DefaultSocketPath, "/var/run/nri/nri.sock"). Its parent directory is
// created with mode 0700 if missing; a stale socket file is replaced.
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

// WithUpdateFunc sets the function that applies container updates plugins
// ask for outside lifecycle requests (default: such updates are refused
// with an error naming the plugin).
func WithUpdateFunc(fn UpdateFunc) Option {
	return func(c *config) error {
		c.update = fn
		return nil
	}
}
