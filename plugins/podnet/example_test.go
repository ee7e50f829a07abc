package podnet_test

import (
	"context"
	"fmt"
	"log"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/plugins/podnet"
)

// The plugin's metrics go to a registry of the caller's, which serves
// them (cmd/nri-podnet: -http-address).
func ExampleNewMetrics() {
	reg := prometheus.NewRegistry()
	m, err := podnet.NewMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	p, err := podnet.New(context.Background(), podnet.WithMetrics(m)) // configured later, by the runtime
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	m.Reconciled(podnet.ReconcileRoutes) // as the Kubernetes side does

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), len(mf.GetMetric()))
	}
	// Output:
	// nrinet_podnet_errors_total 4
	// nrinet_podnet_hostport_conflicts_total 1
	// nrinet_podnet_reconciles_total 3
	// nrinet_podnet_setup_duration_seconds 1
	// nrinet_podnet_teardown_duration_seconds 1
}
