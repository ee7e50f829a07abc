package cni_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

// cniErrors is the exposition of nrinet_cni_errors_total with these values.
func cniErrors(setup, status, sync, teardown int) string {
	return fmt.Sprintf(`# HELP nrinet_cni_errors_total Failed operations, by op: setup, teardown, status, sync (a network's garbage collection).
# TYPE nrinet_cni_errors_total counter
nrinet_cni_errors_total{op="setup"} %d
nrinet_cni_errors_total{op="status"} %d
nrinet_cni_errors_total{op="sync"} %d
nrinet_cni_errors_total{op="teardown"} %d
`, setup, status, sync, teardown)
}

// sampleCount returns the number of observations of a histogram of reg.
func sampleCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
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

// TestMetrics attaches pods to a real CNI network through the plugin's
// handlers and reads the metrics.
func TestMetrics(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	tn := newTestNet(t, "1.1.0", "198.18.108.0/24")
	reg := prometheus.NewRegistry()
	m, err := cni.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger(t)
	p, err := cni.New(ctx, cni.WithConfig(tn.config()), cni.WithLogger(logger), cni.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	want := func(step string, setups, teardowns uint64, errs string) {
		t.Helper()
		if got := sampleCount(t, reg, "nrinet_cni_setup_duration_seconds"); got != setups {
			t.Errorf("%s: setups observed: %d, want %d", step, got, setups)
		}
		if got := sampleCount(t, reg, "nrinet_cni_teardown_duration_seconds"); got != teardowns {
			t.Errorf("%s: teardowns observed: %d, want %d", step, got, teardowns)
		}
		if err := promtest.GatherAndCompare(reg, strings.NewReader(errs), "nrinet_cni_errors_total"); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	want("at start", 0, 0, cniErrors(0, 0, 0, 0))

	var pods []*api.PodSandbox
	for i := range 2 {
		pod, _ := newPod(t, i)
		if _, err := p.RunPodSandboxNetwork(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod)
	}
	missing := &api.PodSandbox{Id: randHex(32), Name: "gone", Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: "/var/run/netns/" + randName()}}}}
	if _, err := p.RunPodSandboxNetwork(ctx, missing); err == nil {
		t.Fatal("attaching a pod without its network namespace succeeded")
	}
	if n, err := p.RunPodSandboxNetwork(ctx, &api.PodSandbox{Id: randHex(32), Name: "host"}); n != nil || err != nil {
		t.Fatalf("attaching a host-network pod = %v, %v", n, err)
	}
	if n, err := p.PodSandboxStatus(ctx, pods[0], true); err != nil || n.GetInfo()[cni.InfoCheck] != "ok" {
		t.Fatalf("PodSandboxStatus = %v, %v", n, err)
	}
	want("after three setups", 3, 0, cniErrors(1, 0, 0, 0))

	for _, pod := range pods {
		if err := p.StopPodSandbox(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Synchronize(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	want("after teardown and sync", 3, 2, cniErrors(1, 0, 0, 0))
}

// TestMetrics_Unconfigured: the failures of a plugin without a network
// are counted; none is observed as a setup of a host-network pod.
func TestMetrics_Unconfigured(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := cni.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cni.New(ctx, cni.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "unconfigured", Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: "/proc/self/ns/net"}}}}
	if _, err := p.PodSandboxStatus(ctx, pod, false); !errors.Is(err, cni.ErrNotConfigured) {
		t.Errorf("PodSandboxStatus = %v, want ErrNotConfigured", err)
	}
	if err := p.StopPodSandbox(ctx, pod); !errors.Is(err, cni.ErrNotConfigured) {
		t.Errorf("StopPodSandbox = %v, want ErrNotConfigured", err)
	}
	if _, err := p.Synchronize(ctx, nil, nil); !errors.Is(err, cni.ErrNotConfigured) {
		t.Errorf("Synchronize = %v, want ErrNotConfigured", err)
	}
	if err := promtest.GatherAndCompare(reg, strings.NewReader(cniErrors(0, 1, 1, 1)), "nrinet_cni_errors_total"); err != nil {
		t.Error(err)
	}
	if got := sampleCount(t, reg, "nrinet_cni_teardown_duration_seconds"); got != 1 {
		t.Errorf("teardowns observed: %d, want 1", got)
	}
	if _, err := cni.NewMetrics(reg); err == nil {
		t.Error("NewMetrics registered twice on one registry")
	}
	if _, err := cni.New(ctx, cni.WithMetrics(nil)); err == nil {
		t.Error("WithMetrics(nil) accepted")
	}
}
