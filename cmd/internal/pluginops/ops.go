package pluginops

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nrinet/nrinet/cmd/internal/health"
	"github.com/nrinet/nrinet/cmd/internal/logflags"
	"github.com/nrinet/nrinet/internal/ttrpclog"
	"github.com/nrinet/nrinet/internal/version"
	"github.com/nrinet/nrinet/plugin"
)

// Ops are a plugin command's operability flags and what serves them.
//
// /readyz passes when every check in Checks does. The stub's (connected
// to the runtime and configured now) is there from Start on, failing
// until Joining hands over the stub; other parts add theirs with
// Checks.Add.
type Ops struct {
	// Version is -version: print "<name> <version>" and exit.
	Version bool
	// HealthAddress is -health-address; empty: no server.
	HealthAddress string
	// Checks is the readiness of /readyz.
	Checks health.Checks
	// Handlers are more GET endpoints of the health server, by path
	// (nri-podnet's /explain); set before Start.
	Handlers map[string]http.Handler
	// Log are -log-level and -log-format (and -verbose, the same as
	// -log-level debug).
	Log *logflags.Flags

	verbose bool

	name string
	stub atomic.Pointer[plugin.Stub]
	addr string // the server's, once started
}

// AddFlags defines -version, -health-address, -log-level, -log-format
// and -verbose on fs for the command name (e.g. "nri-podnet").
func AddFlags(fs *flag.FlagSet, name string) *Ops {
	o := &Ops{name: name, Log: logflags.Add(fs)}
	fs.BoolVar(&o.Version, "version", false, fmt.Sprintf("print %q and exit", name+" VERSION"))
	fs.StringVar(&o.HealthAddress, "health-address", "", "serve /healthz, /readyz and /metrics (Prometheus) on this `host:port`, e.g. :9465; empty: off")
	fs.BoolVar(&o.verbose, "verbose", false, "the same as -log-level debug (kept for existing command lines)")
	return o
}

// Parse parses args (the command line after the program name) into fs,
// where AddFlags defined the flags, and does what every plugin command
// does first: it refuses stray arguments and a malformed -health-address
// (usage errors), prints "<name> <version>" on stdout for -version (done
// is then true: the command exits 0), and returns the logger the logging
// flags ask for, writing to stderr, with ttrpc's log routed to it.
func (o *Ops) Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (log *slog.Logger, done bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, false, err // Main exits 0
		}
		return nil, false, Usage(err)
	}
	if err := NoArgs(fs); err != nil {
		return nil, false, err
	}
	if o.HealthAddress != "" {
		if err := health.CheckAddress(o.HealthAddress); err != nil {
			return nil, false, Usage(fmt.Errorf("-health-address: %w", err))
		}
	}
	if o.Version {
		fmt.Fprintln(stdout, o.name, version.String())
		return nil, true, nil
	}
	if log, err = o.Logger(stderr); err != nil {
		return nil, false, Usage(err)
	}
	ttrpclog.Route(log)
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

// Start serves the health endpoints, with -health-address, until stop is
// called; register adds the plugin's metrics to the registry first.
// Without -health-address it does nothing, and register is not called.
func (o *Ops) Start(log *slog.Logger, register func(prometheus.Registerer) error) (stop func(), err error) {
	if o.HealthAddress == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), health.BuildInfo(o.name))
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
	srv, err := health.Listen(o.HealthAddress, h)
	if err != nil {
		return nil, fmt.Errorf("-health-address: %w", err)
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
	return false, o.name + ": not connected to the runtime yet"
}
