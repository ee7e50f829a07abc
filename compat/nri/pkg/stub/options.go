package stub

import (
	"context"
	"errors"
	"fmt"
	stdnet "net"

	"github.com/containerd/ttrpc"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
)

// Option configures a stub in New.
type Option func(*stub) error

// WithOnClose sets a function called each time the connection to the
// runtime ends, Stop included. It runs on a goroutine of its own and may
// call Stop and Wait; Wait does not wait for it.
func WithOnClose(onClose func()) Option {
	return func(s *stub) error {
		s.onClose = onClose
		return nil
	}
}

// WithPluginName sets the plugin's name. It overrides NRI_PLUGIN_NAME and
// the executable's name; given twice, the last one counts. A name that is
// not valid (letters, digits and "_.+-") is an error.
func WithPluginName(name string) Option {
	return func(s *stub) error {
		if err := api.CheckPluginName(name); err != nil {
			return fmt.Errorf("stub: WithPluginName: %w", err)
		}
		if s.pluginName != "" {
			s.logger.Infof(context.TODO(), "plugin name %q overrides %q", name, s.pluginName)
		}
		s.pluginName = name
		return nil
	}
}

// WithPluginIdx sets the plugin's two-digit index. It overrides
// NRI_PLUGIN_IDX and the executable's name; given twice, it is an error.
func WithPluginIdx(idx string) Option {
	return func(s *stub) error {
		if s.pluginIdx != "" {
			return fmt.Errorf("stub: WithPluginIdx(%q): plugin index already set to %q", idx, s.pluginIdx)
		}
		if err := api.CheckPluginIndex(idx); err != nil {
			return fmt.Errorf("stub: WithPluginIdx: %w", err)
		}
		s.pluginIdx = idx
		return nil
	}
}

// WithSocketPath sets the runtime socket to dial (default
// api.DefaultSocketPath). A plugin the runtime launched uses the socket it
// inherited instead.
func WithSocketPath(path string) Option {
	return func(s *stub) error {
		if path == "" {
			return errors.New("stub: WithSocketPath: empty path")
		}
		s.socketPath = path
		return nil
	}
}

// WithConnection makes the stub use an established connection to the
// runtime, for one Start. A nil connection leaves the stub dialing.
func WithConnection(conn stdnet.Conn) Option {
	return func(s *stub) error {
		s.conn = conn
		return nil
	}
}

// WithDialer sets the function that connects to the socket path.
func WithDialer(d func(string) (stdnet.Conn, error)) Option {
	return func(s *stub) error {
		if d == nil {
			return errors.New("stub: WithDialer: nil dialer")
		}
		s.dialer = d
		return nil
	}
}

// WithTTRPCOptions adds options to the ttrpc client that calls the
// runtime and to the ttrpc server that serves the runtime's requests. A
// client close callback among them is replaced by the stub's own: use
// WithOnClose.
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return func(s *stub) error {
		s.clientOpts = append(s.clientOpts, clientOpts...)
		s.serverOpts = append(s.serverOpts, serverOpts...)
		return nil
	}
}

// WithLogger sets the logger of the stub (default: the logger of pkg/log
// when New is called).
func WithLogger(logger nrilog.Logger) Option {
	return func(s *stub) error {
		if logger == nil {
			return errors.New("stub: WithLogger: nil logger")
		}
		s.logger = logger
		return nil
	}
}

// WithFailurePolicy tells the runtime how to treat the plugin's failures
// to handle a request (a timeout, a lost connection): FailRequest fails
// the request instead of carrying on without the plugin, KeepConnected
// keeps a plugin that timed out instead of dropping it. An error the
// plugin returns always fails the request. Runtimes before NRI v0.12.5
// ignore it.
func WithFailurePolicy(policy *api.FailurePolicy) Option {
	return func(s *stub) error {
		if policy == nil {
			return errors.New("stub: WithFailurePolicy: nil policy")
		}
		s.failurePolicy = policy
		return nil
	}
}
