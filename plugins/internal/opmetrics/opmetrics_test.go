package opmetrics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nrinet/nrinet/plugins/internal/opmetrics"
)

func TestOps(t *testing.T) {
	o := opmetrics.New("nri_x", opmetrics.Help{Setup: "s", Teardown: "t", Errors: "e"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(o.Collectors()...)
	observe := func(op string, err error) { o.Observe(op, time.Now(), &err) }
	observe(opmetrics.Setup, nil)
	observe(opmetrics.Setup, errors.New("boom"))
	observe(opmetrics.Teardown, nil)
	observe(opmetrics.Status, errors.New("stale"))
	want := `
# HELP nri_x_errors_total e
# TYPE nri_x_errors_total counter
nri_x_errors_total{op="setup"} 1
nri_x_errors_total{op="status"} 1
nri_x_errors_total{op="sync"} 0
nri_x_errors_total{op="teardown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "nri_x_errors_total"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"nri_x_setup_duration_seconds": 2, "nri_x_teardown_duration_seconds": 1} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && int(mf.GetMetric()[0].GetHistogram().GetSampleCount()) != n {
				t.Errorf("%s: %d samples, want %d", name, mf.GetMetric()[0].GetHistogram().GetSampleCount(), n)
			}
		}
	}
	var none *opmetrics.Ops
	none.Failed(opmetrics.Sync) // a nil *Ops does nothing
	var err error
	none.Observe(opmetrics.Setup, time.Now(), &err)
}
