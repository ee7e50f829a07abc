package podnet

import (
	"errors"
	"log/slog"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// Option configures a Plugin in [New].
type Option func(*options) error

type options struct {
	log      *slog.Logger
	cfg      *Config
	metrics  *Metrics
	policies Policies

	multinet  *multinet.Manager
	secondary Secondary
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("podnet: WithLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithConfig sets the plugin's own configuration (a plugin started by
// hand with a configuration file): New opens the allocator and sets up
// the bridge at once, and it takes precedence over the runtime's: a
// configuration the runtime passes in Configure is then ignored (and
// logged). Without it the plugin waits for the runtime's. The rule is
// nri-cni's too.
func WithConfig(cfg Config) Option {
	return func(o *options) error {
		if o.cfg != nil {
			return errors.New("podnet: WithConfig given twice")
		}
		o.cfg = &cfg
		return nil
	}
}

// WithPolicies makes the plugin tell pe of every pod it sets up (before
// RunPodSandbox returns: a pod the engine cannot cover fails), stops and
// finds at Synchronize.
func WithPolicies(pe Policies) Option {
	return func(o *options) error {
		if pe == nil {
			return errors.New("podnet: WithPolicies: nil engine")
		}
		if o.policies != nil {
			return errors.New("podnet: WithPolicies given twice")
		}
		o.policies = pe
		return nil
	}
}

// WithMetrics makes the plugin record its metrics in m (see [Metrics]);
// without it the plugin records none.
func WithMetrics(m *Metrics) Option {
	return func(o *options) error {
		if m == nil {
			return errors.New("podnet: WithMetrics: nil Metrics")
		}
		if o.metrics != nil {
			return errors.New("podnet: WithMetrics given twice")
		}
		o.metrics = m
		return nil
	}
}

// WithSecondary gives every pod, after its eth0, the secondary interfaces
// sec asks for, attached by m (see docs/multinetwork.md): before
// RunPodSandbox returns, all or none (a pod that cannot have them all
// fails, and keeps nothing, eth0 included); detached at StopPodSandbox;
// those of pods that are gone detached at Synchronize. They are in the
// pod's network as interfaces net1, net2, ...; the pod's IPs stay
// eth0's.
func WithSecondary(m *multinet.Manager, sec Secondary) Option {
	return func(o *options) error {
		if m == nil || sec == nil {
			return errors.New("podnet: WithSecondary: nil manager or source")
		}
		if o.secondary != nil {
			return errors.New("podnet: WithSecondary given twice")
		}
		o.multinet, o.secondary = m, sec
		return nil
	}
}
