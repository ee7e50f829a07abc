package main

import (
	"flag"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugins/cni"
)

// ops are the command's operability flags and what serves them
// (cmd/internal/pluginops), with nri-cni's metrics.
type ops struct {
	*pluginops.Ops
	metrics *cni.Metrics // nil without -health-address
}

// addOpsFlags defines -version and -health-address on fs.
func addOpsFlags(fs *flag.FlagSet) *ops {
	return &ops{Ops: pluginops.AddFlags(fs, "nri-cni")}
}

// start serves /healthz, /readyz and /metrics with -health-address until
// stop is called; without it, it does nothing.
func (o *ops) start(log *slog.Logger) (stop func(), err error) {
	return o.Start(log, func(reg prometheus.Registerer) (err error) {
		o.metrics, err = cni.NewMetrics(reg)
		return err
	})
}

// cniOptions are the options of cni.New the flags call for.
func (o *ops) cniOptions() []cni.Option {
	if o.metrics == nil {
		return nil
	}
	return []cni.Option{cni.WithMetrics(o.metrics)}
}
