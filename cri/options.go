package cri

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Server.
type Option func(*config) error

type config struct {
	logger         *slog.Logger
	runtimeVersion string
	stateDir       string
	registerer     prometheus.Registerer
	cleanupTimeout time.Duration
	info           map[string]any
}

// Defaults of the options.
const (
	// DefaultRuntimeVersion is what Version reports as runtime_version
	// unless WithRuntimeVersion says otherwise.
	DefaultRuntimeVersion = "0.1.0"
	// DefaultCleanupTimeout bounds the NRI calls and namespace deletion
	// made to undo or stop a sandbox after the caller gave up.
	DefaultCleanupTimeout = 30 * time.Second
)

func defaultConfig() config {
	return config{
		runtimeVersion: DefaultRuntimeVersion,
		cleanupTimeout: DefaultCleanupTimeout,
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("cri: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithRuntimeVersion sets the runtime_version Version reports (default
// DefaultRuntimeVersion). It should be a semantic version.
func WithRuntimeVersion(v string) Option {
	return func(c *config) error {
		if v == "" {
			return errors.New("cri: WithRuntimeVersion: empty version")
		}
		c.runtimeVersion = v
		return nil
	}
}

// WithStateDir names nrinetd's state directory, whose file system
// ImageFsInfo reports and where RunPodSandbox marks the namespaces it is
// creating (default: none: ImageFsInfo reports no file system, and a
// namespace a crash left while it was being created is not found again).
// New creates it with mode 0700, or makes an existing one 0700 if group
// or others have any permission on it, and logs that (see SecureDir).
func WithStateDir(dir string) Option {
	return func(c *config) error {
		c.stateDir = dir
		return nil
	}
}

// WithMetrics registers the server's Prometheus collectors on reg (default:
// no metrics). The caller owns reg and serves it.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) error {
		if reg == nil {
			return errors.New("cri: WithMetrics: nil registerer")
		}
		c.registerer = reg
		return nil
	}
}

// WithCleanupTimeout bounds the work done after a caller gave up: undoing
// a failed RunPodSandbox and completing a stop (default
// DefaultCleanupTimeout).
func WithCleanupTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("cri: WithCleanupTimeout: %v is not positive", d)
		}
		c.cleanupTimeout = d
		return nil
	}
}

// WithStatusInfo adds entries to the info map of a verbose Status, each
// value encoded as JSON (an object under key "config" is what crictl info
// shows as the configuration). Later calls add to earlier ones.
func WithStatusInfo(key string, value any) Option {
	return func(c *config) error {
		if key == "" {
			return errors.New("cri: WithStatusInfo: empty key")
		}
		if c.info == nil {
			c.info = map[string]any{}
		}
		c.info[key] = value
		return nil
	}
}
