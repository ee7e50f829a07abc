package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/backoff"
)

// Option configures a Stub.
type Option func(*config) error

type config struct {
	name, idx     string
	socketPath    string
	conn          net.Conn
	dial          func(ctx context.Context, path string) (net.Conn, error)
	logger        *slog.Logger
	onClose       func(error)
	failurePolicy *api.FailurePolicy
	env           func(string) string
	args0         string
	reconnect     *backoff.Backoff // nil: Run does not reconnect
	// requireNetworkExtension: refuse a runtime without the pod network
	// extension (WithRequiredNetworkExtension).
	requireNetworkExtension bool
	// declineNetworkExtension: answer Configure without the extension
	// (WithoutNetworkExtension).
	declineNetworkExtension bool
	clientOpts              []ttrpc.ClientOpts
	serverOpts              []ttrpc.ServerOpt
}

// WithPluginName sets the plugin's name, overriding NRI_PLUGIN_NAME and
// the executable's file name. Names consist of [A-Za-z0-9_.+-].
func WithPluginName(name string) Option {
	return func(c *config) error {
		if err := api.ValidatePluginName(name); err != nil {
			return fmt.Errorf("plugin: WithPluginName: %w", err)
		}
		c.name = name
		return nil
	}
}

// WithPluginIdx sets the plugin's two-digit index, which orders plugins
// (lower first). It overrides NRI_PLUGIN_IDX and the executable's name.
func WithPluginIdx(idx string) Option {
	return func(c *config) error {
		if err := api.ValidatePluginIndex(idx); err != nil {
			return fmt.Errorf("plugin: WithPluginIdx: %w", err)
		}
		c.idx = idx
		return nil
	}
}

// WithSocketPath sets the runtime socket to dial (default
// api.DefaultSocketPath). It is not used when the runtime launched the
// plugin with a connected socket (NRI_PLUGIN_SOCKET) or WithConnection is
// given.
func WithSocketPath(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("plugin: WithSocketPath: empty path")
		}
		c.socketPath = path
		return nil
	}
}

// WithConnection makes the stub use an established connection to the
// runtime instead of dialing. The connection is used for one Start only.
func WithConnection(conn net.Conn) Option {
	return func(c *config) error {
		if conn == nil {
			return errors.New("plugin: WithConnection: nil connection")
		}
		c.conn = conn
		return nil
	}
}

// WithDialer sets the function used to connect to the socket path.
func WithDialer(dial func(ctx context.Context, path string) (net.Conn, error)) Option {
	return func(c *config) error {
		if dial == nil {
			return errors.New("plugin: WithDialer: nil dialer")
		}
		c.dial = dial
		return nil
	}
}

// WithLogger sets the logger (default: discard). Every record carries the
// plugin's full name as attribute "plugin".
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("plugin: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithOnClose sets a function called once each time a connection to the
// runtime ends, with the reason (ErrStopped after Stop). It runs on its own
// goroutine, which Wait and Run wait for and Stop does not: it may call
// Stop, but not Wait or Run.
func WithOnClose(fn func(error)) Option {
	return func(c *config) error {
		if c.onClose != nil {
			return errors.New("plugin: WithOnClose given twice")
		}
		c.onClose = fn
		return nil
	}
}

// WithFailurePolicy tells the runtime how to treat this plugin's failures
// (timeouts, a lost connection) during a request: FailRequest fails the
// request instead of carrying on without the plugin, KeepConnected keeps a
// plugin that timed out. Runtimes before NRI v0.12.5 ignore it.
func WithFailurePolicy(p *api.FailurePolicy) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("plugin: WithFailurePolicy: nil policy")
		}
		c.failurePolicy = p
		return nil
	}
}

// WithEnv replaces the environment lookup (default os.Getenv) and the
// executable name (default os.Args[0]) that the plugin's identity and the
// inherited socket are derived from. It is meant for tests and for hosts
// that embed several plugins in one process.
func WithEnv(getenv func(string) string, args0 string) Option {
	return func(c *config) error {
		if getenv == nil {
			return errors.New("plugin: WithEnv: nil lookup function")
		}
		c.env, c.args0 = getenv, args0
		return nil
	}
}

// WithTTRPCOptions adds options to the ttrpc client the stub calls the
// runtime with and to the ttrpc server that serves the runtime's requests
// (for instance OpenTelemetry interceptors). They apply to every
// connection. A client close callback given here is replaced by the
// stub's own: use WithOnClose.
func WithTTRPCOptions(client []ttrpc.ClientOpts, server []ttrpc.ServerOpt) Option {
	return func(c *config) error {
		c.clientOpts = append(c.clientOpts, client...)
		c.serverOpts = append(c.serverOpts, server...)
		return nil
	}
}
