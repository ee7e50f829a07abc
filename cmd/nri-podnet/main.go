// Command nri-podnet is nrinet's native pod network plugin (package
// plugins/podnet): bridge, veth created directly in the pod's network
// namespace, persistent IPAM, no exec.
//
// Started by the runtime from its plugin directory (as NN-podnet) it reads
// its configuration from the runtime (NN-podnet.conf or podnet.conf in the
// runtime's configuration directory) and exits when the runtime shuts it
// down or goes away; starting it again is up to the runtime. Started by
// hand it connects to the runtime's socket and reads -config:
//
//	nri-podnet -config /etc/nri-podnet.json [-socket /var/run/nri/nri.sock] [-idx 10] [-name podnet]
//
// It then outlives the runtime: when the runtime stops or restarts, or its
// socket is not there yet, it logs why and connects again (with backoff,
// waiting at most 5 s between attempts), and is synchronized again when it
// rejoins, until it gets SIGINT or SIGTERM.
//
// With -http-address ADDR (e.g. :9465; its deprecated name
// -health-address still works, with a warning in the log) it serves, from
// its start:
// /healthz, 200 "ok" while the process serves; /readyz, 200 "ok" while it
// is connected to the runtime and configured by it, else 503 with the
// reason on one line; /metrics, its Prometheus metrics (nrinet_podnet_*: see
// plugins/podnet.Metrics) and the Go runtime's and the process's. -version
// prints "nri-podnet VERSION" and exits.
//
// It needs a runtime with nrinet's pod network extension (nrinetd, or
// containerd or CRI-O on nrinet in network_mode "nri").
// Launched or started by hand, it refuses a runtime whose Configure does
// not advertise it (stock containerd, CRI-O, any runtime on containerd/nri
// v0.12.5), which would drop the networks it returns while the interfaces
// it set up broke the runtime's own (CNI) setup of every pod: it answers
// Configure with an error, so the runtime never takes it in and it touches
// no pod, does not reconnect, prints one error and exits with status 3:
//
//	nri-podnet: plugin "10-podnet" refuses to join runtime "containerd" version "v2.4.2": it needs nrinet's pod network extension, which the runtime does not advertise in Configure, so the pod networks the plugin sets up would be dropped; run it with a runtime built on nrinet (nrinetd, or containerd on nrinet with network_mode = "nri"), and on this runtime keep using CNI
//
// There is no option to run it on such a runtime anyway. Started with
// -config, it has set up its bridge and state directory before it
// connects, and leaves them.
//
// A usage or configuration error exits with status 2 before anything is
// done (no bridge, nftables table, route, state directory or health
// server; -uninstall removes nothing), with one line on standard error
// naming the flag or the file and key, and the value: an unknown flag, a
// bad flag value (-idx "abc", -name, -http-address, -cluster-cidr,
// -log-level), stray arguments (these with the hint to run -help), no
// -config and no -kube when started by hand, a -config file that cannot
// be read, does not parse, has an unknown key or a bad value (read at
// start with -kube and -uninstall too), with -kube no node name, a
// kubeconfig file that cannot be read or is invalid, or no in-cluster
// configuration. -help prints the usage on standard output and exits 0.
// Any other error exits with status 1 (package cmd/internal/cli).
//
// As a Kubernetes cluster network (a DaemonSet on every node):
//
//	nri-podnet -kube [-kubeconfig FILE] [-node-name NAME] [-cluster-cidr CIDRS] [-config FILE]
//
// takes its subnets from this node's Node (spec.podCIDRs; -node-name
// defaults to $NODE_NAME, no -kubeconfig means the in-cluster
// configuration) and the rest from -config (bridge, mtu, stateDir,
// exclude; or the defaults), waiting unconnected, and so with the runtime
// reporting NetworkReady false and /readyz saying why, until the Node has
// pod CIDRs. It then keeps routes to the other nodes' pod CIDRs (proto
// 78), IP forwarding, and with -cluster-cidr the masquerade of traffic
// leaving the cluster (nftables table inet nrinet-podnet; without
// -cluster-cidr that table is removed). SIGTERM leaves all of them for the
// pods; see package plugins/podnet/kube for a change of the pod CIDRs
// while it runs (/readyz then fails). -cluster-cidr with a static -config
// masquerades its subnets, set once at start. With -kube it also
// enforces the cluster's NetworkPolicies for this node's pods (package
// plugins/podnet/policies; nftables table inet nrinet-podnet-netpol),
// unless -network-policy=false: it waits for the first full sync before
// connecting, and a pod's policies are in the kernel before its
// RunPodSandbox returns. "nri-podnet -uninstall [-config FILE]
// [-multinetwork FILE]" checks -config as a start does (a file with
// subnets as a static configuration, one without as -kube's) and
// -multinetwork, and then removes
// the routes, the nftables tables (inet nrinet-podnet, the masquerade,
// inet nrinet-podnet-hostport, the pods' host ports and their
// CVE-2020-8558 guard, inet nrinet-podnet-netpol, the policies, bridge
// nrinet-podnet-portsec-BRIDGE, the pods' port security, and with
// -multinetwork that of each bridge network's bridge),
// route_localnet of the bridge (before the host port table) and the bridge
// of this node, and exits (secondary networks' bridges stay).
//
// "nri-podnet explain [-address HOST:PORT] SRC DST PORT/PROTO" asks the
// nri-podnet running on the node (its -http-address, default
// 127.0.0.1:9465) why its NetworkPolicies allow or deny a new connection,
// and prints one line naming the policies (GET /explain?src=&dst=&port=
// on the health server answers the same).
package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

// flags are nri-podnet's command line.
type flags struct {
	cmd            *cli.Command
	config, socket string
	ops            *pluginops.Ops
	cluster        *clusterFlags
}

// command is nri-podnet's command line.
func command() *flags {
	c := cli.New("nri-podnet", `
nrinet's native pod network plugin. It needs a runtime with nrinet's pod
network extension (nrinetd, or containerd or CRI-O on nrinet in
network_mode "nri"): it refuses to join a runtime without it (stock
containerd, CRI-O), which would drop its networks, and exits with status 3.
A usage or configuration error exits with status 2, before anything is done
(-uninstall removes nothing then); any other error with status 1.`,
		"-config FILE [-socket PATH] [flags]",
		"-kube [-kubeconfig FILE] [-node-name NAME] [-cluster-cidr CIDRS] [-config FILE] [flags]",
		"-uninstall [-config FILE] [-multinetwork FILE]",
		"explain [-address HOST:PORT] SRC DST PORT/PROTO")
	f := &flags{cmd: c}
	c.Flags.StringVar(&f.config, "config", "", "configuration `file` (JSON), required unless the runtime launched the plugin or -kube is given; it takes precedence over a configuration the runtime sends, which is then ignored")
	c.Flags.StringVar(&f.socket, "socket", "", "runtime NRI socket `path` to dial (default "+api.DefaultSocketPath+"); unused when the runtime launched the plugin")
	f.ops = pluginops.AddFlags(c, "podnet", "10")
	f.cluster = addClusterFlags(c)
	return f
}

// main exits with status 2 for a usage or configuration error, 3 when
// the plugin refused a runtime without nrinet's pod network extension, 1
// for every other error (pluginops.ExitCode).
func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "explain" {
		c, address := newExplainCommand()
		pluginops.Main(c, func() error { return explainCommand(c, address, args[1:], os.Stdout) })
	}
	f := command()
	pluginops.Main(f.cmd, func() error { return run(f, args) })
}

// run reads the command line and the configuration, checking all of it
// (checkStart, or uninstallBridge) before it does anything, then
// uninstalls or serves.
func run(f *flags, args []string) error {
	ops := f.ops
	log, done, err := ops.Parse(args, os.Stdout, os.Stderr)
	if done || err != nil {
		return err
	}
	if f.cluster.uninstall {
		bridge, err := uninstallBridge(f.config, f.cluster.kube, f.cluster.nodeName)
		if err != nil {
			return err
		}
		secondary, err := multinetworkFile(f.cluster.multinetwork)
		if err != nil {
			return err
		}
		return uninstall(bridge, secondary, log)
	}
	launched := os.Getenv(api.PluginSocketEnv) != ""
	plan, err := checkStart(f.cmd, f.cluster, f.config, launched)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		metrics    *podnet.Metrics   // nil without -http-address
		polMetrics *policies.Metrics // nil without -http-address
	)
	expl := &explainer{}
	ops.Handlers = map[string]http.Handler{"/explain": expl}
	stopOps, err := ops.Start(log, func(reg prometheus.Registerer) (err error) {
		if metrics, err = podnet.NewMetrics(reg); err != nil {
			return err
		}
		polMetrics, err = policies.NewMetrics(reg)
		return err
	})
	if err != nil {
		return err
	}
	defer stopOps()

	cn, err := startCluster(ctx, plan, log, metrics, polMetrics)
	if err != nil {
		return err
	}
	defer cn.Stop()
	ops.Checks.Add(cn.Ready)
	if cn.policies != nil {
		expl.policies.Store(cn.policies)
	}
	// With -kube this waits for the Node's pod CIDRs, not connected, so
	// that the runtime reports NetworkReady false.
	cfg, err := cn.Config(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		return err
	}
	sec, err := startMultinetwork(ctx, plan, log)
	if err != nil {
		return err
	}
	defer sec.Stop()
	popts := append([]podnet.Option{podnet.WithLogger(log)}, cn.podnetOptions()...)
	popts = append(popts, sec.options()...)
	if metrics != nil {
		popts = append(popts, podnet.WithMetrics(metrics))
	}
	if cfg != nil {
		popts = append(popts, podnet.WithConfig(*cfg))
	}
	p, err := podnet.New(ctx, popts...)
	if err != nil {
		return err
	}
	defer p.Close()

	return ops.Serve(ctx, p, log, f.socket, launched, plugin.WithFailurePolicy(failurePolicy()))
}

// failurePolicy is nri-podnet's failure policy: a request it answers
// after the runtime's request timeout fails (the pod's sandbox; the kubelet
// creates it again), and the plugin stays connected. Without
// keep_connected the runtime disconnects the plugin for one late answer:
// every pod whose setup is in flight fails with it, NetworkReady turns
// false until the plugin is back, and the plugin's rejoin (a Synchronize
// of every pod) comes on top; under a burst of pods on a busy node (100
// at once on 2 cores, docs/performance.md) that happened again and again.
// A connection that breaks, or a plugin that stops reading its socket,
// still disconnects it.
func failurePolicy() *api.FailurePolicy {
	return &api.FailurePolicy{FailRequest: true, KeepConnected: true}
}
