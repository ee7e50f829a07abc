package plugin

import (
	"errors"
	"fmt"

	"github.com/nrinet/nrinet/api"
)

// WithRequiredNetworkExtension makes the plugin refuse a runtime that does
// not support nrinet's pod network extension, for a plugin whose whole
// job is a pod's network: on such a runtime (containerd, CRI-O, any
// runtime on containerd/nri v0.12.5) the networks it returns would be
// dropped while the interfaces it sets up get in the way of the runtime's
// own (CNI), so that pods fail.
//
// Without this option a stub joins any runtime: where the extension is
// missing it subscribes to the classic events only, still calls
// RunPodSandboxNetwork but drops the network, and logs one warning.
//
// With it, when the runtime's Configure request does not advertise the
// extension, the stub answers Configure with an error before calling the
// plugin's ConfigureHandler, so the runtime drops the connection and never
// takes the plugin in: it gets no Synchronize, no RunPodSandbox, no other
// event. Start and Run then return one [*NoNetworkExtensionError], which
// matches [ErrNoNetworkExtension] and names the plugin and the runtime.
// The refusal is final: with [WithReconnect], Run returns it instead of
// connecting again.
func WithRequiredNetworkExtension() Option {
	return func(c *config) error {
		c.requireNetworkExtension = true
		return nil
	}
}

// WithoutNetworkExtension makes the plugin answer Configure as a plugin
// of upstream NRI does, without the pod network extension, even where
// the runtime offers it: it subscribes to the classic events only, and its
// pods come without the extension's fields (port_mappings, dns_config).
// A runtime built on nrinet takes no network from such a plugin, and lets
// it share its name with other plugins without the extension, as
// upstream's runtime lets any plugins do. compat/nri's stub, whose plugins
// have upstream's interfaces and no way to return a network, is built
// with it.
//
// New refuses it together with [WithRequiredNetworkExtension], and for a
// handler that implements [RunPodSandboxNetworkHandler] or
// [PodSandboxStatusHandler].
func WithoutNetworkExtension() Option {
	return func(c *config) error {
		c.declineNetworkExtension = true
		return nil
	}
}

// checkNetworkExtension refuses WithoutNetworkExtension together with
// what needs the extension.
func (s *Stub) checkNetworkExtension() error {
	switch {
	case !s.cfg.declineNetworkExtension:
		return nil
	case s.cfg.requireNetworkExtension:
		return errors.New("plugin: WithoutNetworkExtension and WithRequiredNetworkExtension together")
	case s.implementsNetwork():
		return fmt.Errorf("plugin: WithoutNetworkExtension: %T implements a pod network handler, which needs the extension", s.handler)
	}
	return nil
}

// offeredExtension is the version of the pod network extension the
// runtime offers in req, 0 for a stub built with WithoutNetworkExtension.
func (s *Stub) offeredExtension(req *api.ConfigureRequest) uint32 {
	if s.cfg.declineNetworkExtension {
		return 0
	}
	return req.GetNetworkExtension().GetVersion()
}

// refusal is the error a stub built with WithRequiredNetworkExtension
// answers a Configure request with, nil if it may go on.
func (s *Stub) refusal(req *api.ConfigureRequest) *NoNetworkExtensionError {
	if !s.cfg.requireNetworkExtension || req.GetNetworkExtension().GetVersion() != 0 {
		return nil
	}
	return &NoNetworkExtensionError{Plugin: s.Name(), Runtime: req.GetRuntimeName(), RuntimeVersion: req.GetRuntimeVersion()}
}
