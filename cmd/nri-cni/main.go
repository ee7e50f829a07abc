// Command nri-cni is the CNI network plugin for NRI (package
// plugins/cni): it attaches pods to a CNI network and reports their
// networks to the runtime. It runs CNI as containerd v2.4.2 does: the
// lexically first *.conflist, *.conf or *.json file in confDir (or the
// one defining the named network), the loopback network cni-loopback
// before the pod's (or lo set up directly with useInternalLoopback),
// containerd's CNI_ARGS and capability arguments (portMappings,
// bandwidth, dns, cgroupPath, the pod's annotations); and in addition
// STATUS before each ADD (cniVersion 1.1.0) and garbage collection when
// it joins (every cniVersion). See the package documentation of
// plugins/cni.
//
// Launched by the runtime from its plugin directory (as NN-cni), it gets
// its configuration in Configure from NN-cni.conf, and exits when the
// runtime shuts it down (status 0) or the connection is lost (status 1);
// starting it again is up to the runtime. A Configure whose network does
// not load (no conflist in confDir yet, say) fails, so it does not join:
// the runtime logs why and launches it again, with backoff, until it
// does. Started by hand, it reads -config (without it, the defaults:
// /etc/cni/net.d, /opt/cni/bin, /var/lib/cni) and dials -socket:
//
//	nri-cni [-config FILE] [-socket PATH] [-name cni] [-idx 10] [-log-level LEVEL] [-log-format text|json] [-http-address ADDR]
//
// Started by hand, it loads its CNI network before it connects. While the
// network does not load (confDir missing or without a conflist, no file
// defining the named network, a file that does not parse, a plugin not
// installed yet), it logs "waiting for a CNI network configuration" with
// the directory and the reason, again whenever the reason changes, and
// tries again every second; SIGINT or SIGTERM end it with status 0. So it
// registers only with a network to offer, and a runtime that requires it
// reports the network not ready meanwhile. A -config file that cannot be
// read, does not parse or is invalid ends it at once with status 2.
//
// It then outlives the runtime: when the runtime stops (even after sending
// Shutdown) or restarts, or its socket is not there yet, it logs why and
// connects again (with backoff, waiting at most 5 s between attempts), and
// is configured (the network reloaded) and synchronized again when it
// rejoins, until it gets SIGINT or SIGTERM, which end it with status 0.
//
// With -http-address ADDR (e.g. :9466; its deprecated name
// -health-address still works, with a warning in the log) it serves, from
// its start (while it waits for its network too): /healthz, 200 "ok"
// while the process serves; /readyz, 200 "ok" while it is connected to the runtime and
// configured by it, else 503 with the reason on one line; /metrics, its
// Prometheus metrics (nrinet_cni_*: see plugins/cni.Metrics) and the Go
// runtime's and the process's. -version prints "nri-cni VERSION" and
// exits.
//
// It needs a runtime with nrinet's pod network extension (nrinetd, or
// containerd or CRI-O on nrinet in network_mode "nri").
// Launched or started by hand, it refuses a runtime whose Configure does
// not advertise it (stock containerd, CRI-O, any runtime on containerd/nri
// v0.12.5), which would drop the networks it returns and attach pods with
// its own CNI setup as well: it answers Configure with an error, so the
// runtime never takes it in and it runs no CNI command for any pod, does
// not reconnect, prints one error and exits with status 3:
//
//	nri-cni: plugin "10-cni" refuses to join runtime "containerd" version "v2.4.2": it needs nrinet's pod network extension, which the runtime does not advertise in Configure, so the pod networks the plugin sets up would be dropped; run it with a runtime built on nrinet (nrinetd, or containerd on nrinet with network_mode = "nri"), and on this runtime keep using CNI
//
// There is no option to run it on such a runtime anyway. Started by hand,
// it has loaded the network (asking each CNI plugin's VERSION) before it
// connects.
//
// A usage or configuration error (an unknown flag, a bad flag value such
// as -idx "abc", stray arguments, a -config file that cannot be read,
// does not parse, has an unknown key or a bad value) exits with status 2
// before anything is done (no health server, no CNI command, no file):
// one line on standard error naming the flag or the file and key, and for
// a bad command line the hint to run -help. -help prints the usage on
// standard output and exits 0. Any other error exits with status 1
// (package cmd/internal/cli).
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugins/cni"
)

// command is nri-cni's command line.
func command() (*cli.Command, *pluginops.Ops, *string, *string) {
	c := cli.New("nri-cni", `
Attaches pods to a CNI network and returns their networks to the runtime.
Started by hand, it waits until its CNI network loads (a conflist in confDir,
its plugins in binDirs) before it connects. It needs a runtime with nrinet's
pod network extension (nrinetd, or containerd or CRI-O on nrinet in
network_mode "nri"): it refuses to join a runtime without it (stock
containerd, CRI-O), which would drop its networks, and exits with
status 3. A usage or configuration error exits with status 2, before
anything is done; any other error with status 1.`,
		"[-config FILE] [-socket PATH] [flags]")
	configFile := c.Flags.String("config", "", "configuration `file` (JSON); it takes precedence over a configuration the runtime sends, which is then ignored")
	socket := c.Flags.String("socket", "", "runtime NRI socket `path` to dial (default "+api.DefaultSocketPath+"); unused when the runtime launched the plugin")
	ops := pluginops.AddFlags(c, "cni", "10")
	return c, ops, configFile, socket
}

// main exits with status 2 for a usage or configuration error, 3 when
// the plugin refused a runtime without nrinet's pod network extension, 1
// for every other error (pluginops.ExitCode).
func main() {
	c, ops, configFile, socket := command()
	pluginops.Main(c, func() error { return run(ops, configFile, socket) })
}

// run reads the command line (into ops, configFile and socket) and the
// -config file, then serves: every usage and configuration error comes
// before the health server and the CNI network.
func run(ops *pluginops.Ops, configFile, socket *string) error {
	logger, done, err := ops.Parse(os.Args[1:], os.Stdout, os.Stderr)
	if done || err != nil {
		return err
	}
	var cfg *cni.Config
	if *configFile != "" {
		b, err := cli.ReadFile("config", *configFile)
		if err != nil {
			return err
		}
		if cfg, err = cni.ConfigFromBytes(b); err != nil {
			return cli.FileError("config", *configFile, err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var extra []cni.Option
	stopOps, err := ops.Start(logger, func(reg prometheus.Registerer) error {
		m, err := cni.NewMetrics(reg)
		if err != nil {
			return err
		}
		extra = append(extra, cni.WithMetrics(m))
		return nil
	})
	if err != nil {
		return err
	}
	defer stopOps()

	launched := os.Getenv(api.PluginSocketEnv) != ""
	p, err := newHandler(ctx, cfg, launched, logger, extra...)
	if err != nil {
		return err
	}
	if p == nil {
		return nil // SIGINT or SIGTERM while waiting for the network
	}

	return ops.Serve(ctx, p, logger, *socket, launched)
}

// newHandler returns the CNI plugin handler. Launched by the runtime, the
// plugin gets its configuration in Configure (or fileCfg, -config's, if
// given), and Configure fails without a network: the runtime launches it
// again. Started by hand, it loads its network (fileCfg's, or the
// defaults) before it connects, waiting for it (WaitForNetwork) as long
// as it does not load; it returns nil, nil if ctx ends meanwhile.
func newHandler(ctx context.Context, fileCfg *cni.Config, launched bool, logger *slog.Logger, extra ...cni.Option) (*cni.Plugin, error) {
	opts := append([]cni.Option{cni.WithLogger(logger)}, extra...)
	var cfg cni.Config
	switch {
	case fileCfg != nil:
		cfg = *fileCfg
	case launched:
		return cni.New(ctx, opts...)
	default:
		cfg = cni.DefaultConfig()
	}
	opts = append(opts, cni.WithConfig(cfg))
	if launched {
		return cni.New(ctx, opts...)
	}
	for {
		if _, err := cni.WaitForNetwork(ctx, cfg, cni.WithWaitLogger(logger)); err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, err
		}
		p, err := cni.New(ctx, opts...)
		if err == nil || !cni.IsNetworkLoadError(err) {
			return p, err
		}
		// The configuration changed between the two loads: wait again.
		logger.Info("the CNI network configuration changed while loading; waiting again", "dir", cfg.ConfDir, "error", err)
	}
}
