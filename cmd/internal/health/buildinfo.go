package health

import (
	goruntime "runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/internal/version"
)

// BuildInfo is the nrinet_build_info metric of command: a gauge of 1
// labelled with the command, nrinet's version and the Go version it was
// built with, registered by every nrinet command that serves /metrics.
func BuildInfo(command string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nrinet_build_info",
		Help: "A metric with a constant 1 labelled with the command, nrinet's version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{
			"command": command, "version": version.String(), "goversion": goruntime.Version(),
		},
	})
	g.Set(1)
	return g
}
