// Command nrinetd is a pod-sandbox-only CRI runtime: it serves the CRI
// RuntimeService (package cri) for pod sandboxes whose networks NRI plugins
// set up (package runtime), e.g. nri-podnet launched from the plugin
// directory. It runs no containers.
//
//	nrinetd [-config /etc/nrinetd/config.toml] [-cri-socket /run/nrinet/cri.sock]
//	        [-nri-socket /var/run/nri/nri.sock] [-plugin-dir /opt/nri/plugins]
//	        [-plugin-config-dir /etc/nri/conf.d] [-state-dir /var/lib/nrinetd]
//	        [-required-network-plugins podnet] [-status-timeout 250ms]
//	        [-status-cache-ttl 1s] [-http-address 127.0.0.1:9464] [-log-level info] [-version]
//
// The configuration file is TOML (see contrib/nrinetd.toml); flags given
// on the command line override it. It also accepts containerd's names for
// the NRI settings, so that a containerd user's values carry over:
// socket_path (nri_socket), plugin_path (plugin_dir), plugin_config_path
// (plugin_config_dir), plugin_registration_timeout (registration_timeout),
// plugin_request_timeout (request_timeout) and disable_connections = true
// (nri_socket = ""); one setting given under both names with different
// values is an error naming both keys. -version prints "nrinetd VERSION"
// and exits. -http-address (the key http_address) is the address of
// /healthz, /readyz and /metrics; the deprecated names -metrics-address
// and metrics_address still work, each with a warning in the log.
//
// A usage or configuration error exits with status 2 before anything is
// done (no state directory, no socket), with one line on standard error
// naming the flag, or the file and the key, and the value: an unknown
// flag, a bad flag value (with the hint to run -help), stray arguments, a
// configuration file that cannot be read, does not parse, has an unknown
// key or a bad value. -help prints the usage on standard output and exits
// 0. Any other error is logged and exits with status 1.
//
// SIGTERM or SIGINT shut down gracefully: CRI requests in flight finish,
// then the plugins are shut down. Sandboxes and their network namespaces
// survive a restart.
//
// With NOTIFY_SOCKET set (systemd's Type=notify), nrinetd sends READY=1
// once its CRI socket accepts connections and STOPPING=1 when it begins
// to shut down; the plugins it launches do not inherit the variable.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/health"
	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/internal/ttrpclog"
	"github.com/nrinet/nrinet/internal/unixsock"
	"github.com/nrinet/nrinet/internal/version"
	"github.com/nrinet/nrinet/runtime"
)

func main() {
	var (
		o        options
		f        daemonConfig
		required string
	)
	c := command(&o, &f, &required)
	c.Main(func() error { return startAndRun(c, &o, &f, &required, os.Args[1:]) })
}

// startAndRun reads the command line and the configuration, all of it
// before anything is done, and runs nrinetd until SIGTERM or SIGINT. Its
// error is what cli.Command.Main reports: a usage or configuration error
// (status 2, nothing done), flag.ErrHelp after -help, or run's failure
// (status 1), which is logged as well.
func startAndRun(c *cli.Command, o *options, f *daemonConfig, required *string, args []string) error {
	log, err := start(c, o, f, required, args)
	if err != nil || log == nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n := notifier{addr: os.Getenv("NOTIFY_SOCKET")}
	os.Unsetenv("NOTIFY_SOCKET") // not for the plugins nrinetd launches
	if err := run(ctx, *o, log, n); err != nil {
		log.Error("nrinetd failed", "error", err)
		return err
	}
	return nil
}

// start parses args into o, f and required and returns the logger to run
// with; or a nil logger and nil after -version (printed here), or the
// usage or configuration error.
func start(c *cli.Command, o *options, f *daemonConfig, required *string, args []string) (*slog.Logger, error) {
	if err := parseFlags(c, o, f, required, args); err != nil {
		return nil, err
	}
	if o.showVersion {
		fmt.Println("nrinetd", version.String())
		return nil, nil
	}
	log, err := o.config.logger(os.Stderr)
	if err != nil { // Validate checked it
		return nil, cli.Usage(err)
	}
	for _, d := range o.deprecated {
		log.Warn(d)
	}
	ttrpclog.Route(log)
	return log, nil
}

// run serves until ctx ends, then shuts down gracefully; n hears when it
// is ready and when it stops.
func run(ctx context.Context, o options, log *slog.Logger, n notifier) error {
	cfg := o.config
	ver := version.String()
	log.Info("starting nrinetd", "version", ver, "config", o.configPath, "criSocket", cfg.CRISocket,
		"nriSocket", cfg.NRISocket, "pluginDir", cfg.PluginDir, "stateDir", cfg.StateDir,
		"requiredNetworkPlugins", cfg.RequiredNetworkPlugins)
	was, err := cri.SecureDir(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if was != 0 {
		log.Warn("the state directory was open to other users; it now has mode 0700", "dir", cfg.StateDir, "was", was.String())
	}
	store, err := cri.OpenStore(filepath.Join(cfg.StateDir, "sandboxes.db"))
	if err != nil {
		return err
	}
	defer store.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), health.BuildInfo("nrinetd"))
	pluginMetrics, err := cri.NewPluginMetrics(reg)
	if err != nil {
		return err
	}
	rt, err := runtime.New(cri.RuntimeName, ver, append(cfg.runtimeOptions(),
		runtime.WithObserver(pluginMetrics),
		runtime.WithPodNetworkStore(store),
		runtime.WithSyncFunc(store.SyncPods),
		runtime.WithLogger(log.With("component", "nri")))...)
	if err != nil {
		return err
	}
	srv, err := cri.New(rt, store,
		cri.WithLogger(log.With("component", "cri")),
		cri.WithRuntimeVersion(ver),
		cri.WithStateDir(cfg.StateDir),
		cri.WithMetrics(reg),
		cri.WithStatusInfo("config", cfg))
	if err != nil {
		return err
	}
	shutdownCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), time.Duration(cfg.ShutdownTimeout))
	}
	if err := rt.Start(ctx); err != nil {
		return fmt.Errorf("starting the NRI runtime: %w", err)
	}
	defer func() {
		sctx, cancel := shutdownCtx()
		defer cancel()
		if err := rt.Stop(sctx); err != nil {
			log.Warn("stopping the NRI plugins", "error", err)
		}
	}()
	if ready, why := rt.NetworkReady(); !ready {
		log.Warn("network not ready", "reason", why)
	}

	l, err := listenUnix(cfg.CRISocket)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(context.WithoutCancel(ctx), l) }()
	log.Info("serving CRI", "socket", cfg.CRISocket)

	// /healthz, /readyz (the required network plugins connected: the
	// NetworkReady condition) and /metrics, as the plugins serve them.
	stopHealth := func() error { return nil }
	if cfg.HTTPAddress != "" {
		hs, err := health.Listen(cfg.HTTPAddress, health.Handler(reg, rt.NetworkReady))
		if err != nil {
			srv.Close()
			<-errc
			return fmt.Errorf("http_address: %w", err)
		}
		stopHealth = hs.Start()
		log.Info("serving /healthz, /readyz and /metrics", "address", hs.Addr().String())
	}

	if err := n.notify("READY=1"); err != nil {
		log.Warn("telling the service manager nrinetd is ready", "error", err)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-errc:
		log.Error("server ended", "error", serveErr)
	}
	if err := n.notify("STOPPING=1"); err != nil {
		log.Warn("telling the service manager nrinetd is stopping", "error", err)
	}
	sctx, cancel := shutdownCtx()
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("CRI requests still running at shutdown were cancelled", "error", err)
	}
	if err := stopHealth(); err != nil {
		log.Warn("health server", "error", err)
	}
	os.Remove(cfg.CRISocket)
	if serveErr != nil && !errors.Is(serveErr, cri.ErrClosed) && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// listenUnix listens on the CRI socket, mode 0600 whatever the process
// umask, creating its directory (0755) if missing and replacing a stale
// socket file (package unixsock).
func listenUnix(path string) (net.Listener, error) {
	l, err := unixsock.Listen(path, 0o755)
	if err != nil {
		return nil, fmt.Errorf("CRI socket: %w", err)
	}
	return l, nil
}
