package podnet_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nrinet/nrinet/api"
	nrtest "github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// counters is the exposition of nrinet_podnet_errors_total and
// nrinet_podnet_reconciles_total with these values, in label order.
func counters(setup, status, sync, teardown, masq, routes, syncs int) string {
	return fmt.Sprintf(`# HELP nrinet_podnet_errors_total Failed operations, by op: setup, teardown, status, sync.
# TYPE nrinet_podnet_errors_total counter
nrinet_podnet_errors_total{op="setup"} %d
nrinet_podnet_errors_total{op="status"} %d
nrinet_podnet_errors_total{op="sync"} %d
nrinet_podnet_errors_total{op="teardown"} %d
# HELP nrinet_podnet_reconciles_total Reconciliations, by kind: sync (Synchronize with the runtime's pods), routes (to other nodes), masquerade.
# TYPE nrinet_podnet_reconciles_total counter
nrinet_podnet_reconciles_total{kind="masquerade"} %d
nrinet_podnet_reconciles_total{kind="routes"} %d
nrinet_podnet_reconciles_total{kind="sync"} %d
`, setup, status, sync, teardown, masq, routes, syncs)
}

// addresses is the exposition of the address gauges for a v4 and a v6
// subnet.
func addresses(v4, v6 string, inUse4, free4, inUse6 int, free6 uint64) string {
	return fmt.Sprintf(`# HELP nrinet_podnet_addresses_free Addresses of the subnet still free to hand out (saturates at 2^64-1).
# TYPE nrinet_podnet_addresses_free gauge
nrinet_podnet_addresses_free{subnet=%q} %d
nrinet_podnet_addresses_free{subnet=%q} %s
# HELP nrinet_podnet_addresses_in_use Addresses of the subnet that pods hold.
# TYPE nrinet_podnet_addresses_in_use gauge
nrinet_podnet_addresses_in_use{subnet=%q} %d
nrinet_podnet_addresses_in_use{subnet=%q} %d
`, v4, free4, v6, strconv.FormatFloat(float64(free6), 'g', -1, 64), v4, inUse4, v6, inUse6)
}

// observations returns the sample count of a histogram of reg.
func observations(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func gatherAndCompare(t *testing.T, reg *prometheus.Registry, step, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}

// TestMetrics sets pods up and down through the plugin's handlers, in
// real network namespaces, and reads the metrics after each step.
func TestMetrics(t *testing.T) {
	nrtest.SkipUnlessRoot(t)
	x := 1 + int(randHex(1)[0])%250
	v4, v6 := fmt.Sprintf("198.19.%d.0/28", x), fmt.Sprintf("fd00:198:18:%x::/64", 0x100+x)
	cfg := podnet.Config{Bridge: "nrpm" + randHex(4), Subnets: []string{v4, v6}, MTU: 1500, StateDir: filepath.Join(t.TempDir(), "state")}
	t.Cleanup(func() { deleteBridge(cfg.Bridge) })
	reg := prometheus.NewRegistry()
	m, err := podnet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := podnet.New(context.Background(), podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const (
		gauges = "nrinet_podnet_addresses_in_use nrinet_podnet_addresses_free"
		counts = "nrinet_podnet_errors_total nrinet_podnet_reconciles_total"
	)
	// A /28: 16 - network - broadcast - gateway; a /64: 2^64 - the
	// subnet-router anycast address - gateway.
	const free4, free6 = 13, math.MaxUint64 - 1
	gatherAndCompare(t, reg, "at start", addresses(v4, v6, 0, free4, 0, free6), strings.Fields(gauges)...)
	gatherAndCompare(t, reg, "at start", counters(0, 0, 0, 0, 0, 0, 0), strings.Fields(counts)...)
	// No pod has a host port: no host port series, no conflict (the
	// traffic tests on a node namespace count them: TestPodnet_HostPorts).
	gatherAndCompare(t, reg, "at start", `# HELP nrinet_podnet_hostport_conflicts_total Pods refused (RunPodSandbox failed) because another pod holds a host port, protocol and host IP they ask for.
# TYPE nrinet_podnet_hostport_conflicts_total counter
nrinet_podnet_hostport_conflicts_total 0
`, "nrinet_podnet_hostport_conflicts_total", "nrinet_podnet_hostports")

	ctx := context.Background()
	pfx := "nrpm" + randHex(3)
	var pods []*api.PodSandbox
	for i := range 2 {
		ns := fmt.Sprintf("%s-%d", pfx, i)
		path := nrtest.NewNetNS(t, ns)
		pods = append(pods, &api.PodSandbox{
			Id: fmt.Sprintf("pod-%s-%d", pfx, i), Name: fmt.Sprint("web-", i), Namespace: "default",
			Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: path}}},
		})
		if _, err := p.RunPodSandboxNetwork(ctx, pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	missing := &api.PodSandbox{Id: "pod-" + pfx + "-missing", Name: "gone", Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/" + pfx + "-missing"}}}}
	if _, err := p.RunPodSandboxNetwork(ctx, missing); err == nil {
		t.Fatal("setup of a pod without its network namespace succeeded")
	}
	if n, err := p.RunPodSandboxNetwork(ctx, &api.PodSandbox{Id: "pod-" + pfx + "-host", Name: "host", Namespace: "default"}); n != nil || err != nil {
		t.Fatalf("setup of a host-network pod = %v, %v", n, err)
	}
	if _, err := p.PodSandboxStatus(ctx, pods[0], false); err != nil {
		t.Fatal(err)
	}
	if got := observations(t, reg, "nrinet_podnet_setup_duration_seconds"); got != 3 {
		t.Errorf("setups observed: %d, want 3 (two pods and the failure; not the host-network pod)", got)
	}
	gatherAndCompare(t, reg, "after three setups", addresses(v4, v6, 2, free4-2, 2, free6-2), strings.Fields(gauges)...)
	gatherAndCompare(t, reg, "after three setups", counters(1, 0, 0, 0, 0, 0, 0), strings.Fields(counts)...)

	// The runtime knows pod 0 only: pod 1's addresses are released.
	if _, err := p.Synchronize(ctx, pods[:1], nil); err != nil {
		t.Fatal(err)
	}
	if err := p.StopPodSandbox(ctx, pods[0]); err != nil {
		t.Fatal(err)
	}
	if got := observations(t, reg, "nrinet_podnet_teardown_duration_seconds"); got != 1 {
		t.Errorf("teardowns observed: %d, want 1", got)
	}
	// What the Kubernetes side records (plugins/podnet/kube, masq).
	m.Reconciled(podnet.ReconcileRoutes)
	m.Reconciled(podnet.ReconcileRoutes)
	m.Reconciled(podnet.ReconcileMasquerade)
	gatherAndCompare(t, reg, "after sync and teardown", addresses(v4, v6, 0, free4, 0, free6), strings.Fields(gauges)...)
	gatherAndCompare(t, reg, "after sync and teardown", counters(1, 0, 0, 0, 1, 2, 1), strings.Fields(counts)...)

	if _, err := podnet.New(context.Background(), podnet.WithMetrics(m)); err == nil || !strings.Contains(err.Error(), "another plugin") {
		t.Errorf("a second plugin on the same Metrics: %v, want an error", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	gatherAndCompare(t, reg, "after Close", "", strings.Fields(gauges)...)
}

// TestMetrics_Unconfigured: a plugin waiting for its configuration has no
// address series, and its failures are counted.
func TestMetrics_Unconfigured(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := podnet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := podnet.New(context.Background(), podnet.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod-unconfigured", Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/proc/self/ns/net"}}}}
	ctx := context.Background()
	if _, err := p.PodSandboxStatus(ctx, pod, false); err == nil {
		t.Error("PodSandboxStatus of an unconfigured plugin succeeded")
	}
	if _, err := p.Synchronize(ctx, nil, nil); err == nil {
		t.Error("Synchronize of an unconfigured plugin succeeded")
	}
	if err := p.StopPodSandbox(ctx, pod); err == nil {
		t.Error("StopPodSandbox of an unconfigured plugin succeeded")
	}
	gatherAndCompare(t, reg, "unconfigured", "", "nrinet_podnet_addresses_in_use", "nrinet_podnet_addresses_free")
	gatherAndCompare(t, reg, "unconfigured", counters(0, 1, 1, 1, 0, 0, 1), "nrinet_podnet_errors_total", "nrinet_podnet_reconciles_total")

	if _, err := podnet.NewMetrics(reg); err == nil {
		t.Error("NewMetrics registered twice on one registry")
	}
	if _, err := podnet.New(context.Background(), podnet.WithMetrics(nil)); err == nil {
		t.Error("WithMetrics(nil) accepted")
	}
}
