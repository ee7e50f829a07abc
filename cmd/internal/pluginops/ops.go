package pluginops

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/health"
	"github.com/nrinet/nrinet/cmd/internal/logflags"
	"github.com/nrinet/nrinet/internal/ttrpclog"
	"github.com/nrinet/nrinet/internal/version"
	"github.com/nrinet/nrinet/plugin"
)

// Ops are a plugin command's common flags and what serves them.
//
// /readyz passes when every check in Checks does. The stub's (connected
// to the runtime and configured now) is there from Start on, failing
// until Joining hands over the stub; other parts add theirs with
// Checks.Add.
type Ops struct {
	// Name and Idx are -name and -idx (see Identity).
	Name, Idx string
	// Version is -version: print "<name> <version>" and exit.
	Version bool
	// HTTPAddress is -http-address (deprecated name: -health-address);
	// empty: no server.
	HTTPAddress string
	// Checks is the readiness of /readyz.
	Checks health.Checks
	// Handlers are more GET endpoints of the health server, by path
	// (nri-podnet's /explain); set before Start.
	Handlers map[string]http.Handler
	// Log are -log-level and -log-format (and -verbose, the same as
	// -log-level debug).
	Log *logflags.Flags

	verbose bool

	cmd             *cli.Command
	defName, defIdx string
	stub            atomic.Pointer[plugin.Stub]
	addr            string // the server's, once started
}

// AddFlags defines the flags every plugin command has on c, its command
// line: -name and -idx (defaults defName and defIdx, e.g. "podnet" and
// "10"), -version, -http-address (and its deprecated name
// -health-address), -log-level, -log-format and -verbose.
func AddFlags(c *cli.Command, defName, defIdx string) *Ops {
	o := &Ops{cmd: c, defName: defName, defIdx: defIdx, Log: logflags.Add(c)}
	c.StringVar(&o.Name, "name", defName, "plugin `name`, unless the runtime or the executable's NN-name file name gives one", checkName)
	c.StringVar(&o.Idx, "idx", defIdx, "plugin `index`, two digits, unless the runtime or the executable's NN-name file name gives one", checkIdx)
	c.Flags.BoolVar(&o.Version, "version", false, fmt.Sprintf("print %q and exit", c.Name+" VERSION"))
	health.AddFlag(c, &o.HTTPAddress, "health-address", "/healthz, /readyz and /metrics (Prometheus)")
	c.Flags.BoolVar(&o.verbose, "verbose", false, "the same as -log-level debug (kept for existing command lines)")
	return o
}

// Parse parses args (the command line after the program name) with the
// command line AddFlags was given (cli.Command.Parse: flag.ErrHelp for
// -help, a usage error for a bad flag, a bad value, stray arguments), and
// does what every plugin command does first: it prints "<name> <version>"
// on stdout for -version (done is then true: the command exits 0), and
// returns the logger the logging flags ask for, writing to stderr, with
// ttrpc's log routed to it and a warning for each deprecated flag name
// the command line used.
func (o *Ops) Parse(args []string, stdout, stderr io.Writer) (log *slog.Logger, done bool, err error) {
	if err := o.cmd.Parse(args); err != nil {
		return nil, false, err
	}
	if o.Version {
		fmt.Fprintln(stdout, o.cmd.Name, version.String())
		return nil, true, nil
	}
	if log, err = o.Logger(stderr); err != nil {
		return nil, false, cli.Usage(err)
	}
	ttrpclog.Route(log)
	o.cmd.WarnDeprecated(log)
	return log, false, nil
}

// Logger returns the logger -log-level, -log-format and -verbose ask for,
// writing to w.
func (o *Ops) Logger(w io.Writer) (*slog.Logger, error) {
	f := *o.Log
	if o.verbose {
		f.Level = "debug"
	}
	return f.Logger(w)
}

// Start serves the health endpoints, with -http-address, until stop is
// called; register adds the plugin's metrics to the registry first.
// Without -http-address it does nothing, and register is not called.
func (o *Ops) Start(log *slog.Logger, register func(prometheus.Registerer) error) (stop func(), err error) {
	if o.HTTPAddress == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), health.BuildInfo(o.cmd.Name))
	if err := register(reg); err != nil {
		return nil, err
	}
	o.Checks.Add(o.stubReady)
	h := health.Handler(reg, o.Checks.Ready)
	if len(o.Handlers) > 0 {
		mux := http.NewServeMux()
		mux.Handle("/", h)
		for path, eh := range o.Handlers {
			mux.Handle("GET "+path, eh)
		}
		h = mux
	}
	srv, err := health.Listen(o.HTTPAddress, h)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", health.FlagName, err)
	}
	o.addr = srv.Addr().String()
	log.Info("serving /healthz, /readyz and /metrics", "address", o.addr)
	stopServer := srv.Start()
	return func() {
		if err := stopServer(); err != nil {
			log.Warn("health server", "error", err)
		}
	}, nil
}

// Addr is the address the health server listens on, once Start started
// it; else "".
func (o *Ops) Addr() string { return o.addr }

// Joining hands the stub to the readiness check.
func (o *Ops) Joining(s *plugin.Stub) { o.stub.Store(s) }

// stubReady is the stub's readiness, failing before there is a stub.
func (o *Ops) stubReady() (bool, string) {
	if s := o.stub.Load(); s != nil {
		return s.Ready()
	}
	return false, o.cmd.Name + ": not connected to the runtime yet"
}

// Serve runs network plugin handler h as the plugin commands do, until
// ctx ends: it refuses a runtime without nrinet's pod network extension
// (which would drop its networks and set pods up its own way), takes its
// name and index by Identity, dials socket if given, and reconnects
// unless the runtime launched it (on the socket the runtime passed there
// is nothing to reconnect to). extra are the plugin's own options (its
// failure policy, say). Its readiness joins /readyz. It returns nil after
// SIGINT/SIGTERM (ctx) and after the runtime shut a launched plugin down,
// else why the plugin stopped.
func (o *Ops) Serve(ctx context.Context, h any, log *slog.Logger, socket string, launched bool, extra ...plugin.Option) error {
	opts := []plugin.Option{plugin.WithLogger(log), plugin.WithRequiredNetworkExtension()}
	opts = append(opts, o.Identity()...)
	opts = append(opts, extra...)
	if socket != "" {
		opts = append(opts, plugin.WithSocketPath(socket))
	}
	if !launched {
		opts = append(opts, plugin.WithReconnect(0, 0))
	}
	s, err := plugin.New(h, opts...)
	if err != nil {
		return err
	}
	o.Joining(s)
	return s.Run(ctx)
}
