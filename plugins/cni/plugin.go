package cni

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

// Plugin is the NRI plugin handler that runs a CNI network. Build it with
// New and pass it to plugin.New. Its handlers may be called concurrently.
type Plugin struct {
	log     *slog.Logger
	exec    invoke.Exec
	fileCfg *Config  // from WithConfig
	metrics *Metrics // from WithMetrics; nil: none recorded

	mu    sync.Mutex // guards state
	state *state
}

// state is what a loaded configuration gives: replaced as a whole on
// (re)load, never modified.
type state struct {
	cfg Config
	cni *libcni.CNIConfig
	net *Network
}

var (
	_ plugin.ConfigureHandler            = (*Plugin)(nil)
	_ plugin.SynchronizeHandler          = (*Plugin)(nil)
	_ plugin.RunPodSandboxNetworkHandler = (*Plugin)(nil)
	_ plugin.PodSandboxStatusHandler     = (*Plugin)(nil)
	_ plugin.StopPodSandboxHandler       = (*Plugin)(nil)
)

// New returns a Plugin. With WithConfig it loads the network at once, so
// that a bad configuration is reported before the plugin connects;
// otherwise the network is loaded in Configure.
func New(ctx context.Context, opts ...Option) (*Plugin, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.exec == nil {
		o.exec = defaultExec(o.log)
	}
	p := &Plugin{log: o.log, exec: o.exec, fileCfg: o.cfg, metrics: o.metrics}
	if o.cfg != nil {
		if err := p.load(ctx, *o.cfg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Configure loads the CNI network from the plugin's own configuration
// (WithConfig), which takes precedence (a configuration the runtime passed
// is then ignored, with a log line), else from the runtime's (a JSON
// Config), else from DefaultConfig. A configuration that cannot be loaded
// fails the plugin's registration. It subscribes to every event the plugin
// handles.
func (p *Plugin) Configure(ctx context.Context, config, runtimeName, runtimeVersion string) (api.EventMask, error) {
	cfg := DefaultConfig()
	switch {
	case p.fileCfg != nil:
		cfg = *p.fileCfg
		if config != "" {
			p.log.Info("ignoring the runtime's configuration: the plugin's own takes precedence", "runtime", runtimeName)
		}
	case config != "":
		c, err := ConfigFromBytes([]byte(config))
		if err != nil {
			return 0, fmt.Errorf("configuration from the runtime: %w", err)
		}
		cfg = *c
	}
	if err := p.load(ctx, cfg); err != nil {
		return 0, err
	}
	p.log.Debug("configured", "runtime", runtimeName, "runtimeVersion", runtimeVersion)
	return 0, nil
}

// load loads the network cfg selects and makes it current.
func (p *Plugin) load(ctx context.Context, cfg Config) error {
	n, err := loadNetwork(ctx, cfg, p.exec)
	if err != nil {
		return err
	}
	st := &state{cfg: cfg, net: n, cni: libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, p.exec)}
	p.mu.Lock()
	p.state = st
	p.mu.Unlock()
	p.log.Info("loaded CNI network", "network", n.List.Name, "cniVersion", n.List.CNIVersion, "file", n.File)
	return nil
}

// current returns the loaded state.
func (p *Plugin) current() (*state, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return nil, ErrNotConfigured
	}
	return p.state, nil
}

// refresh returns the current state after reloading the network if the
// configuration directory changed since it was loaded. A changed
// configuration that cannot be loaded is an error; the old one stays
// current, and the next call tries again.
func (p *Plugin) refresh(ctx context.Context) (*state, error) {
	old, err := p.current()
	if err != nil {
		return nil, err
	}
	dir, err := scanConfDir(old.cfg.ConfDir)
	if err == nil && dir.equal(old.net.dir) {
		return old, nil
	}
	n, err := loadNetwork(ctx, old.cfg, p.exec)
	if err != nil {
		p.log.Error("reloading the changed CNI network configuration failed", "dir", old.cfg.ConfDir, "error", err)
		return nil, fmt.Errorf("reloading the changed CNI network configuration: %w", err)
	}
	st := &state{cfg: old.cfg, cni: old.cni, net: n}
	p.mu.Lock()
	if p.state == old { // not replaced by Configure meanwhile
		p.state = st
	}
	p.mu.Unlock()
	p.log.Info("reloaded changed CNI network configuration", "network", n.List.Name, "cniVersion", n.List.CNIVersion, "file", n.File)
	return st, nil
}

// Network returns the network in use, or nil before one was loaded.
func (p *Plugin) Network() *Network {
	st, err := p.current()
	if err != nil {
		return nil
	}
	return st.net
}
