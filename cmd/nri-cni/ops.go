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
	cniplugin "github.com/nrinet/nrinet/plugins/cni"
)

// ops are the command's operability flags and what serves them:
// -version, and -health-address with /healthz, /readyz and /metrics.
//
// /readyz passes when every check in checks does: the stub's (connected
// to the runtime and configured now), failing until the stub exists,
// which it does once the CNI network loaded.
type ops struct {
	version       bool
	healthAddress string

	checks  health.Checks
	stub    atomic.Pointer[plugin.Stub] // set by joining
	metrics *cniplugin.Metrics          // nil without -health-address
}

// addOpsFlags defines the operability flags on fs.
func addOpsFlags(fs *flag.FlagSet) *ops {
	o := &ops{}
	fs.BoolVar(&o.version, "version", false, `print "nri-cni VERSION" and exit`)
	fs.StringVar(&o.healthAddress, "health-address", "", "serve /healthz, /readyz and /metrics (Prometheus) on this `host:port`, e.g. :9465; empty: off")
	return o
}

// start serves the health endpoints, with -health-address, until stop is
// called; without it, it does nothing. The metrics registry is the
// process's own: Go runtime and process collectors, and nri-cni's.
func (o *ops) start(log *slog.Logger) (stop func(), err error) {
	if o.healthAddress == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.metrics, err = cniplugin.NewMetrics(reg); err != nil {
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

// cniOptions are the options of cniplugin.New the flags call for.
func (o *ops) cniOptions() []cniplugin.Option {
	if o.metrics == nil {
		return nil
	}
	return []cniplugin.Option{cniplugin.WithMetrics(o.metrics)}
}

// joining hands the stub to the readiness check.
func (o *ops) joining(s *plugin.Stub) { o.stub.Store(s) }

// stubReady is the stub's readiness, failing before there is a stub.
func (o *ops) stubReady() (bool, string) {
	if s := o.stub.Load(); s != nil {
		return s.Ready()
	}
	return false, "nri-cni: not connected to the runtime yet"
}
