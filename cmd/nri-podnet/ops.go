package main

import (
	"flag"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nrinet/nrinet/internal/health"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// ops are the command's operability flags and what serves them:
// -version, and -health-address with /healthz, /readyz and /metrics.
//
// /readyz passes when every check in checks does. The stub's (connected
// to the runtime and configured now) is there from the start, failing
// until the stub exists; other parts add theirs with checks.Add, e.g.
// checks.Add(watcher.Ready).
type ops struct {
	version       bool
	healthAddress string

	checks  health.Checks
	stub    atomic.Pointer[plugin.Stub] // set by joining
	metrics *podnet.Metrics             // nil without -health-address
}

// addOpsFlags defines the operability flags on fs.
func addOpsFlags(fs *flag.FlagSet) *ops {
	o := &ops{}
	fs.BoolVar(&o.version, "version", false, `print "nri-podnet VERSION" and exit`)
	fs.StringVar(&o.healthAddress, "health-address", "", "serve /healthz, /readyz and /metrics (Prometheus) on this `host:port`, e.g. :9465; empty: off")
	return o
}

// start serves the health endpoints, with -health-address, until stop is
// called; without it, it does nothing. The metrics registry is the
// process's own: Go runtime and process collectors, and nri-podnet's.
func (o *ops) start(log *slog.Logger) (stop func(), err error) {
	if o.healthAddress == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.metrics, err = podnet.NewMetrics(reg); err != nil {
		return nil, err
	}
	o.checks.Add(o.stubReady)
	srv, err := health.Listen(o.healthAddress, health.Handler(reg, o.checks.Ready))
	if err != nil {
		return nil, fmt.Errorf("-health-address: %w", err)
	}
	log.Info("serving /healthz, /readyz and /metrics", "address", srv.Addr().String())
	stopServer := srv.Start()
	return func() {
		if err := stopServer(); err != nil {
			log.Warn("health server", "error", err)
		}
	}, nil
}

// podnetOptions are the options of podnet.New the flags call for.
func (o *ops) podnetOptions() []podnet.Option {
	if o.metrics == nil {
		return nil
	}
	return []podnet.Option{podnet.WithMetrics(o.metrics)}
}

// joining hands the stub to the readiness check.
func (o *ops) joining(s *plugin.Stub) { o.stub.Store(s) }

// stubReady is the stub's readiness, failing before there is a stub.
func (o *ops) stubReady() (bool, string) {
	if s := o.stub.Load(); s != nil {
		return s.Ready()
	}
	return false, "nri-podnet: not connected to the runtime yet"
}
