package cri

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPluginMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewPluginMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.PluginCall("10-podnet", "RunPodSandbox", 2*time.Millisecond, nil)
	m.PluginCall("10-podnet", "RunPodSandbox", 3*time.Millisecond, errors.New("no addresses"))
	m.NetworkConflict("20-cni", "10-podnet")

	if n := testutil.CollectAndCount(reg, "nrinet_nrinetd_plugin_call_duration_seconds"); n != 1 {
		t.Errorf("%d latency series, want 1", n)
	}
	want := `
# HELP nrinet_nrinetd_plugin_call_errors_total NRI requests to a plugin that failed (an error, a timeout or a lost connection).
# TYPE nrinet_nrinetd_plugin_call_errors_total counter
nrinet_nrinetd_plugin_call_errors_total{method="RunPodSandbox",plugin="10-podnet"} 1
# HELP nrinet_nrinetd_plugin_network_conflicts_total Pods refused because a plugin set a part of the pod network another plugin owned.
# TYPE nrinet_nrinetd_plugin_network_conflicts_total counter
nrinet_nrinetd_plugin_network_conflicts_total{owner="10-podnet",plugin="20-cni"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"nrinet_nrinetd_plugin_call_errors_total", "nrinet_nrinetd_plugin_network_conflicts_total"); err != nil {
		t.Error(err)
	}
	if _, err := NewPluginMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
