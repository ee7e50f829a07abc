package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"

	"k8s.io/client-go/kubernetes"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// clusterPlan is what nri-podnet is to start with, checked by checkStart
// before anything is done.
type clusterPlan struct {
	// config is -config's configuration without -kube; nil when the
	// runtime is to send it, and with -kube.
	config     *podnet.Config
	configPath string
	launched   bool
	cluster    []netip.Prefix

	// With -kube: -config's settings but subnets, the Node, the client
	// and -network-policy.
	kube          bool
	kubeFile      podnet.Config
	nodeName      string
	client        kubernetes.Interface
	networkPolicy bool
	multinet      *multinet.Config // -multinetwork's; nil without
	kubeletDir    string           // -kubelet-dir
}

// checkStart checks the command line and the configuration of a start,
// all of it before anything is done: a usage or configuration error
// (status 2) leaves the node as it was. Without -kube the -config file
// is read and validated whole (a plugin the runtime launched may go
// without: the runtime sends its configuration); with -kube, -node-name,
// the -config file's settings (checked as withPodCIDRs will check them),
// and the kubeconfig file or the in-cluster configuration. With
// -network-policy it also checks for br_netfilter (status 1 without it).
func checkStart(c *cli.Command, f *clusterFlags, configPath string, launched bool) (*clusterPlan, error) {
	cluster, err := masq.ParseCIDRs(f.clusterCIDR) // checked by the flag
	if err != nil {
		return nil, c.UsageError(err)
	}
	p := &clusterPlan{configPath: configPath, launched: launched, cluster: cluster, kube: f.kube, nodeName: f.nodeName, networkPolicy: f.networkPolicy}
	if !f.kube {
		if _, err := readMultinetwork(c, f.multinetwork, false); err != nil {
			return nil, err
		}
		switch {
		case configPath != "":
			cfg, err := readStaticFile(configPath)
			if err != nil {
				return nil, err
			}
			p.config = &cfg
		case !launched:
			// The runtime sends configuration only to plugins it launched.
			return nil, c.UsageError(errors.New("no configuration: give -config or -kube (only a plugin the runtime launches gets its configuration from the runtime)"))
		case len(cluster) > 0:
			return nil, c.UsageError(errors.New("-cluster-cidr needs -config or -kube: the pod subnets must be known before the plugin connects"))
		}
		return p, nil
	}
	if f.nodeName == "" {
		return nil, c.UsageError(errors.New("-kube needs this node's name: give -node-name or set NODE_NAME"))
	}
	if p.multinet, err = readMultinetwork(c, f.multinetwork, f.kube); err != nil {
		return nil, err
	}
	p.kubeletDir = f.kubeletDir
	if p.kubeFile, err = readKubeFile(configPath, f.nodeName); err != nil {
		return nil, err
	}
	if f.networkPolicy && p.kubeFile.NoBridgeNetfilter {
		// Traffic between two pods of the bridge would skip the forward
		// hook, and with it every policy.
		return nil, cli.FileError("config", configPath, errors.New("noBridgeNetfilter: true turns NetworkPolicy enforcement between this node's pods off; remove it, or run with -network-policy=false"))
	}
	if p.client, err = kubeClient(f.kubeconfig); err != nil {
		return nil, err
	}
	if f.networkPolicy {
		if err := checkBrNetfilter(brNetfilterSysctl); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// readStaticFile reads and validates a -config file without -kube (the
// whole configuration, podnet.FromBytes). Errors are usage errors naming
// -config and the file.
func readStaticFile(path string) (podnet.Config, error) {
	b, err := cli.ReadFile("config", path)
	if err != nil {
		return podnet.Config{}, err
	}
	cfg, err := podnet.FromBytes(b)
	return cfg, cli.FileError("config", path, err)
}

// uninstallBridge checks -config for -uninstall as a start checks it,
// and returns the bridge to remove: the file's, or the default without
// -config. With -kube the file is read as -kube's; without, a file that
// sets subnets or gateways is read as a static configuration, any other
// as -kube's (whose DaemonSet's file has none), so that either file can
// be given. Any error is a usage error, and nothing is removed.
func uninstallBridge(path string, kube bool, node string) (string, error) {
	if path == "" {
		return podnet.DefaultBridge, nil
	}
	b, err := cli.ReadFile("config", path)
	if err != nil {
		return "", err
	}
	var peek podnet.Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&peek); err == nil && !kube && (len(peek.Subnets) > 0 || len(peek.Gateways) > 0) {
		cfg, err := podnet.FromBytes(b)
		return cfg.Bridge, cli.FileError("config", path, err)
	}
	c, err := parseKubeFile(b, node)
	if err != nil {
		return "", cli.FileError("config", path, err)
	}
	cfg, err := fillPodCIDRs(c, kubePlaceholder) // the defaults, as a start has them
	return cfg.Bridge, cli.FileError("config", path, err)
}
