package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
	"github.com/nrinet/nrinet/plugins/podnet/kube"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// clusterFlags are the flags of nri-podnet as a cluster network: -kube,
// -kubeconfig, -node-name, -cluster-cidr and -uninstall.
type clusterFlags struct {
	kube          bool
	kubeconfig    string
	nodeName      string
	clusterCIDR   string
	uninstall     bool
	networkPolicy bool
	multinetwork  string
	kubeletDir    string
}

func addClusterFlags(c *cli.Command) *clusterFlags {
	f := &clusterFlags{}
	fs := c.Flags
	fs.BoolVar(&f.kube, "kube", false, "take the subnets from this node's Node object (spec.podCIDRs) instead of the configuration's, waiting for them before connecting; keep routes to the other nodes' pod CIDRs, IP forwarding and the masquerade")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `file` for -kube (default: the in-cluster configuration)")
	fs.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name, for -kube (default $NODE_NAME)")
	c.StringVar(&f.clusterCIDR, "cluster-cidr", "", "comma-separated cluster `CIDRs`, both families: traffic from the pod CIDRs to destinations outside them is masqueraded (nftables table inet nrinet-podnet); empty: no masquerade, and the table is removed", func(s string) error {
		_, err := masq.ParseCIDRs(s)
		return err
	})
	fs.BoolVar(&f.networkPolicy, "network-policy", true, "with -kube: enforce the cluster's NetworkPolicies for this node's pods (nftables table inet nrinet-podnet-netpol), watching NetworkPolicies, Namespaces and Pods; false removes the table")
	fs.StringVar(&f.multinetwork, "multinetwork", "", "with -kube: the node's secondary networks (JSON `file`, package plugins/podnet/multinet), offered to pods as DRA devices of driver podnet.nrinet.io and attached as net1, net2, ... (docs/multinetwork.md)")
	fs.StringVar(&f.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "with -multinetwork: the kubelet's root `directory` (its --root-dir): the DRA driver registers in its plugins_registry and serves in plugins/podnet.nrinet.io")
	fs.BoolVar(&f.uninstall, "uninstall", false, "remove what nri-podnet set up on this node (routes of proto 78, the nftables tables inet nrinet-podnet, inet nrinet-podnet-hostport, inet nrinet-podnet-netpol and bridge nrinet-podnet-portsec-BRIDGE, with -multinetwork that table of each bridge network's bridge too, route_localnet of the bridge, the bridge of -config or nrinet0) and exit; -config and -multinetwork are checked as for a start first")
	return f
}

// clusterNet is what startCluster started: the configuration to serve
// with, and with -kube the Watcher keeping pod CIDRs, routes, forwarding
// and masquerade.
type clusterNet struct {
	// config is the configuration to start the plugin with; nil when the
	// runtime is to send it, or with -kube until the pod CIDRs are known.
	config     *podnet.Config
	configPath string
	kubeFile   podnet.Config // with -kube: -config's settings, read at start
	nodeName   string
	cluster    []netip.Prefix
	log        *slog.Logger

	watcher  *kube.Watcher        // nil without -kube
	policies *policies.Controller // nil without -kube and -network-policy
	denyLog  *netpol.DenyLog      // nil without the configuration's logDenied
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Config returns the configuration to start the plugin with: nil when the
// runtime is to send it. With -kube it first waits until the Node has pod
// CIDRs, or ctx is done (then it returns ctx's error).
func (c *clusterNet) Config(ctx context.Context) (*podnet.Config, error) {
	if c.watcher == nil || c.config != nil {
		return c.config, nil
	}
	cidrs, err := c.watcher.PodCIDRs(ctx)
	if err != nil {
		return nil, err
	}
	if c.policies != nil {
		if ok, why := c.policies.Ready(); !ok {
			c.log.Info("waiting for the NetworkPolicies before serving pods", "reason", why)
		}
		if err := c.policies.WaitSynced(ctx); err != nil {
			return nil, err
		}
	}
	warnUnmasqueraded(cidrs, c.cluster, c.log)
	cfg, err := withPodCIDRs(c.kubeFile, c.configPath, c.nodeName, cidrs)
	if err != nil {
		return nil, cli.Usage(err)
	}
	c.config = &cfg
	return c.config, nil
}

// Ready reports whether the pod CIDRs are known and unchanged (always
// with a static configuration): for /readyz, with the runtime connection.
func (c *clusterNet) Ready() (bool, string) {
	if c.watcher == nil {
		return true, "static configuration"
	}
	if ok, why := c.watcher.Ready(); !ok || c.policies == nil {
		return ok, why
	}
	return c.policies.Ready()
}

// podnetOptions are the plugin's options for what startCluster started:
// the NetworkPolicy engine.
func (c *clusterNet) podnetOptions() []podnet.Option {
	if c.policies == nil {
		return nil
	}
	return []podnet.Option{podnet.WithPolicies(c.policies)}
}

// Stop stops the Watcher and waits for it. Routes, forwarding and
// masquerade stay (see -uninstall).
func (c *clusterNet) Stop() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	if c.denyLog != nil {
		if err := c.denyLog.Close(); err != nil {
			c.log.Warn("closing the deny log", "error", err)
		}
	}
}

// startCluster starts what -kube and -cluster-cidr manage, as p
// (checkStart's) says, counting reconciles and their failures in metrics
// (which may be nil).
func startCluster(ctx context.Context, p *clusterPlan, log *slog.Logger, metrics *podnet.Metrics, polMetrics *policies.Metrics) (*clusterNet, error) {
	var m *masq.Masquerader
	if len(p.cluster) > 0 {
		var err error
		if m, err = masq.New(); err != nil {
			return nil, err
		}
	}
	c := &clusterNet{config: p.config, configPath: p.configPath, kubeFile: p.kubeFile, nodeName: p.nodeName, cluster: p.cluster, log: log}
	if !p.kube {
		if c.config == nil {
			return c, nil // the runtime sends the configuration
		}
		return c, syncMasquerade(m, c.config.Subnets, p.cluster, log)
	}

	if p.launched {
		log.Warn("-kube on a plugin the runtime launched: the runtime's configuration is not used")
	}
	klog.SetSlogLogger(log.With("component", "client-go"))
	router, err := kube.NewRouter(kube.WithRouterLogger(log))
	if err != nil {
		return nil, err
	}
	opts := []kube.Option{kube.WithLogger(log), kube.WithRouter(router), kube.WithForwarding(),
		kube.WithReconcileHook(func(kind string, _ bool, err error) {
			if kind == kube.KindRoutes || kind == kube.KindMasquerade {
				metrics.Reconciled(kind) // podnet.ReconcileRoutes, podnet.ReconcileMasquerade
			}
			if err != nil {
				metrics.Failed(podnet.OpSync)
			}
		}),
	}
	if m != nil {
		opts = append(opts, kube.WithMasquerade(m, p.cluster))
	} else if err := removeMasquerade(); err != nil {
		return nil, err // no -cluster-cidr: no masquerade, not even from before
	}
	if c.watcher, err = kube.NewWatcher(p.client, p.nodeName, opts...); err != nil {
		return nil, err
	}
	if p.networkPolicy {
		var nopts []netpol.Option
		if ld := p.kubeFile.LogDenied; ld != nil {
			n, per, err := ld.Limit() // checked by checkStart
			if err != nil {
				return nil, err
			}
			nopts = append(nopts, netpol.WithLogDenied(netpol.LogDenied{Group: uint16(ld.Group), Rate: n, Per: per, Burst: uint32(ld.Burst)}))
		}
		enf, err := netpol.New(nopts...)
		if err != nil {
			return nil, err
		}
		if c.policies, err = policies.New(p.client, p.nodeName, enf, policies.WithLogger(log), policies.WithMetrics(polMetrics)); err != nil {
			return nil, err
		}
		if p.kubeFile.LogDenied != nil {
			// Stopped by Stop.
			if c.denyLog, err = enf.OpenDenyLog(log.With("component", "netpol")); err != nil {
				return nil, err
			}
		}
	} else if err := removeNetworkPolicies(); err != nil {
		return nil, err // not enforced: no table left from before
	}
	wctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.watcher.Run(wctx); err != nil {
			log.Error("watching the Nodes", "error", err)
		}
	}()
	if c.policies != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := c.policies.Run(wctx); err != nil {
				log.Error("watching the NetworkPolicies", "error", err)
			}
		}()
	}
	return c, nil
}

// brNetfilterSysctl is there when the kernel's br_netfilter is loaded.
const brNetfilterSysctl = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// checkBrNetfilter fails unless sysctl, br_netfilter's, is there: traffic
// between two pods of the bridge reaches the forward hook only through
// br_netfilter, and without it policies would not hold between pods of
// one node.
func checkBrNetfilter(sysctl string) error {
	if _, err := os.Stat(sysctl); err != nil {
		return fmt.Errorf("-network-policy needs the kernel's br_netfilter (modprobe br_netfilter), so that traffic between pods of one node passes netfilter; or run with -network-policy=false: %w", err)
	}
	return nil
}

// removeNetworkPolicies removes the NetworkPolicy table, if it is there.
func removeNetworkPolicies() error {
	e, err := netpol.New()
	if err != nil {
		return err
	}
	return e.Uninstall()
}

// kubeClient is the client of -kubeconfig's cluster, or of the cluster
// nri-podnet runs in; it connects to nothing yet. A kubeconfig that
// cannot be read or is invalid, and a missing in-cluster configuration,
// are usage errors.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		if _, err := cli.ReadFile("kubeconfig", kubeconfig); err != nil {
			return nil, err
		}
		if rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			return nil, cli.FileError("kubeconfig", kubeconfig, err)
		}
	} else if rc, err = rest.InClusterConfig(); err != nil {
		return nil, cli.Usage(fmt.Errorf("-kube without -kubeconfig needs the in-cluster configuration: %w", err))
	}
	rc.UserAgent = "nri-podnet"
	// Protobuf, as kube-proxy and the kubelet ask: a cluster's Pods list
	// decodes in a fraction of JSON's time and garbage.
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("Kubernetes client: %w", err))
	}
	return client, nil
}

// readKubeFile reads -config for -kube: bridge, mtu, stateDir, exclude
// and the other settings but subnets (an empty path: none), checked as
// withPodCIDRs will check them once the Node has pod CIDRs. Errors are
// usage errors naming -config and the file.
func readKubeFile(path, node string) (podnet.Config, error) {
	if path == "" {
		return podnet.Config{}, nil
	}
	b, err := cli.ReadFile("config", path)
	if err != nil {
		return podnet.Config{}, err
	}
	c, err := parseKubeFile(b, node)
	return c, cli.FileError("config", path, err)
}

// kubePlaceholder stands in for the Node's pod CIDRs when a -kube file
// is checked at start.
var kubePlaceholder = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}

// parseKubeFile parses a -config file for -kube. A file that sets subnets
// or gateways is refused: they would contradict the Node's (node's; ""
// this node's).
func parseKubeFile(b []byte, node string) (podnet.Config, error) {
	var c podnet.Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("podnet: parsing configuration: %w", err)
	}
	if len(c.Subnets) > 0 || len(c.Gateways) > 0 {
		whose := "this node's"
		if node != "" {
			whose = "Node " + node + "'s"
		}
		return c, fmt.Errorf("sets subnets %q and gateways %q: with -kube the subnets are %s spec.podCIDRs and the gateways their first hosts; remove them",
			c.Subnets, c.Gateways, whose)
	}
	if _, err := fillPodCIDRs(c, kubePlaceholder); err != nil {
		return c, err
	}
	return c, nil
}

// withPodCIDRs is the configuration with -kube: file's settings (from
// readKubeFile, read from path) with the Node's pod CIDRs as subnets,
// defaults filled in and validated as for a file.
func withPodCIDRs(file podnet.Config, path, node string, cidrs []netip.Prefix) (podnet.Config, error) {
	cfg, err := fillPodCIDRs(file, cidrs)
	if err != nil {
		return cfg, fmt.Errorf("configuration %s with the pod CIDRs %v of Node %s: %w", cmp.Or(path, "(defaults)"), cidrs, node, err)
	}
	return cfg, nil
}

// fillPodCIDRs is file with cidrs as subnets, defaults filled in and
// validated as for a file (podnet.FromBytes).
func fillPodCIDRs(file podnet.Config, cidrs []netip.Prefix) (podnet.Config, error) {
	c := file
	c.Subnets = nil
	for _, p := range cidrs {
		c.Subnets = append(c.Subnets, p.String())
	}
	b, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	return podnet.FromBytes(b)
}

func removeMasquerade() error {
	m, err := masq.New()
	if err != nil {
		return err
	}
	return m.Uninstall()
}

// nftAgents are the agents of every nftables table nri-podnet owns on a
// node with bridge, in the order -uninstall removes them: the host ports'
// last, whose Uninstall turns route_localnet of the bridge back to 0
// before its table, and the guard in it, go.
func nftAgents(bridge string) ([]podnet.Agent, error) {
	m, err1 := masq.New()
	e, err2 := netpol.New()
	g, err3 := portsec.New(bridge, podnet.HostVethPrefix)
	h, err4 := hostport.New(hostport.WithLocalhost(bridge))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	return []podnet.Agent{m, e, g, h}, nil
}

// syncMasquerade sets the masquerade up once for a static configuration,
// or removes it when there are no cluster CIDRs.
func syncMasquerade(m *masq.Masquerader, subnets []string, cluster []netip.Prefix, log *slog.Logger) error {
	if m == nil {
		return nil
	}
	var pods []netip.Prefix
	for _, s := range subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("subnet %q: %w", s, err)
		}
		pods = append(pods, p.Masked())
	}
	warnUnmasqueraded(pods, cluster, log)
	if _, err := m.Sync(pods, cluster); err != nil {
		return err
	}
	log.Info("masquerading traffic that leaves the cluster", "podCIDRs", fmt.Sprint(pods), "clusterCIDRs", fmt.Sprint(cluster))
	return nil
}

// warnUnmasqueraded warns of a pod CIDR whose family has no cluster CIDR
// (its traffic is not masqueraded) or that no cluster CIDR contains.
func warnUnmasqueraded(pods, cluster []netip.Prefix, log *slog.Logger) {
	if len(cluster) == 0 {
		return
	}
	for _, p := range pods {
		sameFamily, inside := false, false
		for _, c := range cluster {
			if c.Addr().Is4() == p.Addr().Is4() {
				sameFamily = true
				inside = inside || (c.Bits() <= p.Bits() && c.Contains(p.Addr()))
			}
		}
		switch {
		case !sameFamily:
			log.Warn("no cluster CIDR of this pod CIDR's family: its traffic is not masqueraded", "podCIDR", p.String(), "clusterCIDRs", fmt.Sprint(cluster))
		case !inside:
			log.Warn("the pod CIDR is in none of the cluster CIDRs", "podCIDR", p.String(), "clusterCIDRs", fmt.Sprint(cluster))
		}
	}
}

// uninstall removes what nri-podnet set up in this network namespace:
// the routes of protocol 78, the nftables tables inet nrinet-podnet
// (masquerade), inet nrinet-podnet-hostport (host ports), inet
// nrinet-podnet-netpol (policies) and bridge nrinet-podnet-portsec-BRIDGE (port
// security; with secondary, that of each bridge network's bridge too:
// multinet.Uninstall), route_localnet of the bridge (back to 0, before the host
// port table and its guard go), and the bridge (uninstallBridge's), with
// its ports. It leaves the state directories and secondary's bridges.
func uninstall(bridge string, secondary *multinet.Config, log *slog.Logger) error {
	var errs []error
	if r, err := kube.NewRouter(kube.WithRouterLogger(log)); err != nil {
		errs = append(errs, err)
	} else {
		n, err := r.Uninstall()
		errs = append(errs, err)
		log.Info("uninstall: routes to other nodes removed", "routes", n)
	}
	agents, err := nftAgents(bridge)
	errs = append(errs, err)
	for _, a := range agents {
		if err := a.Uninstall(); err != nil {
			errs = append(errs, err)
		} else {
			log.Info("uninstall: nftables table removed", "table", a.Table())
		}
	}
	if secondary != nil {
		if err := multinet.Uninstall(*secondary); err != nil {
			errs = append(errs, err)
		} else {
			log.Info("uninstall: the secondary bridge networks' port security tables removed", "networks", len(secondary.Networks))
		}
	}
	link, err := netlink.LinkByName(bridge)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		log.Info("uninstall: no bridge", "bridge", bridge)
	case err != nil:
		errs = append(errs, fmt.Errorf("bridge %q: %w", bridge, err))
	case link.Type() != "bridge":
		errs = append(errs, fmt.Errorf("interface %q is a %s, not a bridge: left alone", bridge, link.Type()))
	default:
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %q: %w", bridge, err))
		} else {
			log.Info("uninstall: bridge deleted", "bridge", bridge)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	return nil
}
