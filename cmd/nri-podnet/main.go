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
// With -health-address ADDR (e.g. :9465) it serves, from its start:
// /healthz, 200 "ok" while the process serves; /readyz, 200 "ok" while it
// is connected to the runtime and configured by it, else 503 with the
// reason on one line; /metrics, its Prometheus metrics (nri_podnet_*: see
// plugins/podnet.Metrics) and the Go runtime's and the process's. -version
// prints "nri-podnet VERSION" and exits.
//
// It needs a runtime with nrinet's pod network extension (nrinetd).
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
// connects, and leaves them. A usage or configuration error (stray
// arguments, a malformed -health-address or -cluster-cidr, a -config file
// that cannot be read or is invalid, read at start with -kube and
// -uninstall too) exits with status 2, any other error with status 1.
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
// RunPodSandbox returns. "nri-podnet -uninstall [-config FILE]" removes
// the routes, the nftables tables (inet nrinet-podnet, the masquerade,
// inet nrinet-podnet-hostport, the pods' host ports and their
// CVE-2020-8558 guard, and inet nrinet-podnet-netpol, the policies),
// route_localnet of the bridge (before the host port table) and the bridge
// of this node, and exits.
//
// "nri-podnet explain [-address HOST:PORT] SRC DST PORT/PROTO" asks the
// nri-podnet running on the node (its -health-address, default
// 127.0.0.1:9465) why its NetworkPolicies allow or deny a new connection,
// and prints one line naming the policies (GET /explain?src=&dst=&port=
// on the health server answers the same).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

// main exits with status 2 for a usage or configuration error, 3 when
// the plugin refused a runtime without nrinet's pod network extension, 1
// for every other error (pluginops.ExitCode).
func main() {
	pluginops.Main("nri-podnet", run)
}

func run() error {
	if len(os.Args) > 1 && os.Args[1] == "explain" {
		return explainCommand(os.Args[2:], os.Stdout, os.Stderr)
	}
	var (
		config = flag.String("config", "", "configuration `file` (JSON), required unless the runtime launched the plugin; it takes precedence over a configuration the runtime sends, which is then ignored")
		socket = flag.String("socket", "", "runtime NRI socket (default /var/run/nri/nri.sock)")
		name   = flag.String("name", "podnet", "plugin `name`, unless the runtime or the executable's NN-name file name gives one")
		idx    = flag.String("idx", "10", "plugin `index`, unless the runtime or the executable's NN-name file name gives one")
		ops    = pluginops.AddFlags(flag.CommandLine, "nri-podnet")
		cf     = addClusterFlags(flag.CommandLine)
	)
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `Usage: nri-podnet -config FILE [-socket PATH] [-name NAME] [-idx NN] [-log-level LEVEL] [-log-format text|json] [-health-address ADDR] [-version]
       nri-podnet -kube [-kubeconfig FILE] [-node-name NAME] [-cluster-cidr CIDRS] [-config FILE] ...
       nri-podnet -uninstall [-config FILE]
       nri-podnet explain [-address HOST:PORT] SRC DST PORT/PROTO

nrinet's native pod network plugin. It needs a runtime with nrinet's pod
network extension (nrinetd): it refuses to join a runtime without it (stock
containerd, CRI-O), which would drop its networks, and exits with status 3.

`)
		flag.PrintDefaults()
	}
	log, done, err := ops.Parse(flag.CommandLine, os.Args[1:], os.Stdout, os.Stderr)
	if done || err != nil {
		return err
	}
	if cf.uninstall {
		return uninstall(*config, log)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		metrics    *podnet.Metrics   // nil without -health-address
		polMetrics *policies.Metrics // nil without -health-address
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

	launched := os.Getenv(api.PluginSocketEnv) != ""
	if *config == "" && !launched && !cf.kube {
		// The runtime sends configuration only to plugins it launched.
		return pluginops.Usage(errors.New("no configuration: give -config or -kube (only a plugin the runtime launches gets its configuration from the runtime)"))
	}
	cn, err := startCluster(ctx, cf, *config, launched, log, metrics, polMetrics)
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
	popts := append([]podnet.Option{podnet.WithLogger(log)}, cn.podnetOptions()...)
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

	return ops.Serve(ctx, p, log, flag.CommandLine, *name, *idx, "podnet", "10", *socket, launched)
}
