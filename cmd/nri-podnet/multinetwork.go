package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/dra"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// readMultinetwork reads and validates a -multinetwork file; it needs
// -kube (the DRA driver talks to the API server as this node). Errors are
// usage errors naming the flag and the file.
func readMultinetwork(c *cli.Command, path string, kube bool) (*multinet.Config, error) {
	if path == "" {
		return nil, nil
	}
	if !kube {
		return nil, c.UsageError(errors.New("-multinetwork needs -kube: the DRA driver publishes the networks and reads the claims of this node"))
	}
	return multinetworkFile(path)
}

// multinetworkFile reads and validates a -multinetwork file, for a start
// (readMultinetwork) or for -uninstall (with or without -kube, which
// removes its bridge networks' port security tables): nil without.
// Errors are usage errors naming the flag and the file.
func multinetworkFile(path string) (*multinet.Config, error) {
	if path == "" {
		return nil, nil
	}
	b, err := cli.ReadFile("multinetwork", path)
	if err != nil {
		return nil, err
	}
	cfg, err := multinet.FromBytes(b)
	if err != nil {
		return nil, cli.FileError("multinetwork", path, err)
	}
	return &cfg, nil
}

// secondaryNets is what -multinetwork started: the networks' manager and
// the DRA driver.
type secondaryNets struct {
	manager *multinet.Manager
	driver  *dra.Driver
}

// startMultinetwork opens the networks (allocators, bridges) and starts
// the DRA kubelet plugin, which publishes them; Stop ends both (the
// interfaces stay).
func startMultinetwork(ctx context.Context, p *clusterPlan, log *slog.Logger) (*secondaryNets, error) {
	if p.multinet == nil {
		return nil, nil
	}
	m, err := multinet.New(*p.multinet, multinet.WithLogger(log.With("component", "multinet")))
	if err != nil {
		return nil, err
	}
	// The helper serves its socket there but does not make the directory.
	if err := os.MkdirAll(filepath.Join(p.kubeletDir, "plugins", dra.DriverName), 0o750); err != nil {
		m.Close()
		return nil, err
	}
	d, err := dra.New(dra.Config{Client: p.client, NodeName: p.nodeName, StateDir: p.multinet.StateDir, Networks: m.Networks(), Logger: log.With("component", "dra")})
	if err == nil {
		err = d.Start(ctx, kubeletplugin.RegistrarDirectoryPath(filepath.Join(p.kubeletDir, "plugins_registry")),
			kubeletplugin.PluginDataDirectoryPath(filepath.Join(p.kubeletDir, "plugins", dra.DriverName)))
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	log.Info("secondary networks ready", "networks", len(m.Networks()), "driver", dra.DriverName)
	return &secondaryNets{manager: m, driver: d}, nil
}

// options are the plugin's: its pods' secondary interfaces.
func (s *secondaryNets) options() []podnet.Option {
	if s == nil {
		return nil
	}
	return []podnet.Option{podnet.WithSecondary(s.manager, s.driver)}
}

// Stop stops the driver and closes the networks.
func (s *secondaryNets) Stop() {
	if s == nil {
		return
	}
	s.driver.Stop()
	s.manager.Close()
}
