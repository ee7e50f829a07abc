package cri_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// netPlugin is an in-process network plugin whose addresses the test
// sets: RunPodSandboxNetwork returns run, PodSandboxStatus returns status
// (nil: nothing new).
type netPlugin struct {
	mu          sync.Mutex
	run, status []string
	runs        int // RunPodSandboxNetwork calls
}

func (p *netPlugin) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	return &api.PodSandboxNetwork{Ips: p.run}, nil
}

// calls returns how often RunPodSandboxNetwork was called.
func (p *netPlugin) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

func (p *netPlugin) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*api.PodSandboxNetwork, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == nil {
		return nil, nil
	}
	return &api.PodSandboxNetwork{Ips: p.status}, nil
}

func (p *netPlugin) setStatus(ips ...string) {
	p.mu.Lock()
	p.status = ips
	p.mu.Unlock()
}

// startNetPlugin connects p as 30-testnet and waits until it joined.
func (e *env) startNetPlugin(p *netPlugin) *plugin.Stub {
	e.t.Helper()
	s, err := plugin.New(p, plugin.WithPluginName("testnet"), plugin.WithPluginIdx("30"), plugin.WithSocketPath(e.nriSock))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Stop)
	rt := e.rt
	testutil.WaitFor(e.t, "30-testnet to join", 10*time.Second, func() bool {
		return slices.ContainsFunc(rt.Plugins(), func(i runtime.PluginInfo) bool { return i.Name == "30-testnet" })
	})
	return s
}

func TestPodNetwork_ChangesArePersisted(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	p := &netPlugin{run: []string{"198.18.210.77"}}
	stub := e.startNetPlugin(p)
	id := e.run(podConfig(1, false))
	if got := ips(e.status(id, false).GetStatus()); !slices.Equal(got, []string{"198.18.210.77"}) {
		t.Fatalf("ips = %v, want the plugin's", got)
	}

	// Pushed by the plugin: stored through the PodNetworkStore.
	if err := stub.UpdatePodSandboxNetwork(ctx, id, &api.PodSandboxNetwork{Ips: []string{"198.18.210.78", "fd00:198:18:210::78"}}); err != nil {
		t.Fatal(err)
	}
	if got := ips(e.status(id, false).GetStatus()); !slices.Equal(got, []string{"198.18.210.78", "fd00:198:18:210::78"}) {
		t.Errorf("ips after the plugin's update = %v", got)
	}

	// Reported in a status round: persisted too.
	p.setStatus("198.18.210.79")
	if got := ips(e.status(id, true).GetStatus()); !slices.Equal(got, []string{"198.18.210.79"}) {
		t.Errorf("ips after a status round = %v", got)
	}

	// After a restart without the plugin the last known addresses stay,
	// and the plugin is reported stale.
	e.restart()
	rsp := e.status(id, true)
	if got := ips(rsp.GetStatus()); !slices.Equal(got, []string{"198.18.210.79"}) {
		t.Errorf("ips after a restart without the plugin = %v", got)
	}
	if info := verboseInfo(t, rsp); info.Stale["30-testnet"] != "plugin not connected" || info.IPs[0].Owner != "30-testnet" {
		t.Errorf("info = %+v, want 30-testnet stale and still the owner", info)
	}
	if n := e.metric("nrinet_nrinetd_nri_stale_network_parts_total", map[string]string{"plugin": "30-testnet"}); n != 1 {
		t.Errorf("stale metric = %v, want 1", n)
	}
	e.removePod(id)
}
