package main

import (
	"flag"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

// ops are the command's operability flags and what serves them
// (cmd/internal/pluginops), with nri-podnet's metrics.
type ops struct {
	*pluginops.Ops
	metrics    *podnet.Metrics   // nil without -health-address
	polMetrics *policies.Metrics // nil without -health-address
}

// addOpsFlags defines -version and -health-address on fs.
func addOpsFlags(fs *flag.FlagSet) *ops {
	return &ops{Ops: pluginops.AddFlags(fs, "nri-podnet")}
}

// start serves /healthz, /readyz and /metrics with -health-address until
// stop is called; without it, it does nothing.
func (o *ops) start(log *slog.Logger) (stop func(), err error) {
	return o.Start(log, func(reg prometheus.Registerer) (err error) {
		if o.metrics, err = podnet.NewMetrics(reg); err != nil {
			return err
		}
		o.polMetrics, err = policies.NewMetrics(reg)
		return err
	})
}

// podnetOptions are the options of podnet.New the flags call for.
func (o *ops) podnetOptions() []podnet.Option {
	if o.metrics == nil {
		return nil
	}
	return []podnet.Option{podnet.WithMetrics(o.metrics)}
}
