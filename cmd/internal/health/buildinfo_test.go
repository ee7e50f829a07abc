package health_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nrinet/nrinet/cmd/internal/health"
)

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(health.BuildInfo("nri-test"))
	n, err := testutil.GatherAndCount(reg, "nrinet_build_info")
	if err != nil || n != 1 {
		t.Fatalf("nrinet_build_info series: %d, %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["command"] != "nri-test" || labels["version"] == "" || !strings.HasPrefix(labels["goversion"], "go") || m.GetGauge().GetValue() != 1 {
		t.Errorf("nrinet_build_info = %v %v", labels, m.GetGauge().GetValue())
	}
}
