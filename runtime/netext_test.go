package runtime_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// extensionProbe records whether the runtime advertised the pod network
// extension and subscribes to the events its mask names.
type extensionProbe struct {
	mask api.EventMask
	seen chan uint32
}

func (p *extensionProbe) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	info, _ := plugin.RuntimeInfoFromContext(ctx)
	p.seen <- info.NetworkExtension
	return p.mask, nil
}

func (p *extensionProbe) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// TestRuntime_WithoutNetworkExtension: a runtime that does not offer the
// pod network extension does not advertise it, and refuses, as an
// upstream runtime does, a plugin subscribing to its event.
func TestRuntime_WithoutNetworkExtension(t *testing.T) {
	if _, err := runtime.New("test", "v1", runtime.WithoutNetworkExtension(), runtime.WithRequiredNetworkPlugins("net")); err == nil ||
		!strings.Contains(err.Error(), "WithRequiredNetworkPlugins") {
		t.Errorf("New with required network plugins and no extension = %v, want an error naming both", err)
	}

	e := newEnv(t, runtime.WithoutNetworkExtension())
	classic := &extensionProbe{mask: api.MaskFor(api.Event_RUN_POD_SANDBOX), seen: make(chan uint32, 1)}
	e.startPlugin(classic, "10", "classic")
	if v := <-classic.seen; v != 0 {
		t.Errorf("the runtime advertised the network extension version %d", v)
	}

	status := &extensionProbe{mask: api.MaskFor(api.Event_RUN_POD_SANDBOX, api.Event_POD_SANDBOX_STATUS), seen: make(chan uint32, 1)}
	s, err := plugin.New(status, plugin.WithPluginName("status"), plugin.WithPluginIdx("20"), plugin.WithSocketPath(e.sock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		s.Stop()
		t.Fatal("a plugin subscribing to PodSandboxStatus joined a runtime without the network extension")
	}
	<-status.seen
	if !contains(e.logs.String(), "PodSandboxStatus") || e.joined("20-status") {
		t.Errorf("the refusal is not logged naming the event, or the plugin joined:\n%s", e.logs)
	}
}

// classicRaw is a raw plugin that answers Configure without the pod
// network extension, and still returns a network from RunPodSandbox.
type classicRaw struct {
	rawPlugin
	network *api.PodSandboxNetwork
}

func (p *classicRaw) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{Adjust: &api.PodSandboxAdjustment{Network: p.network}}, nil
}

func (p *classicRaw) PodSandboxStatus(context.Context, *api.PodSandboxStatusRequest) (*api.PodSandboxStatusResponse, error) {
	return &api.PodSandboxStatusResponse{Network: p.network}, nil
}

func (p *classicRaw) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}

func (p *classicRaw) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}

// TestRuntime_NetworksOnlyFromPluginsWithTheExtension: the pod network
// is the extension's, so a plugin that did not answer Configure with it
// has no part in it even where the runtime offers it (plugins without it
// may share a name, so their name cannot stand for a network part): a
// network it returns from RunPodSandbox is ignored, with a warning, its
// UpdatePodSandboxNetwork is refused, and the network it reports in
// PodSandboxStatus (a raw plugin may subscribe to it) is ignored.
func TestRuntime_NetworksOnlyFromPluginsWithTheExtension(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "net")
	raw := &classicRaw{rawPlugin: rawPlugin{events: int32(api.MaskFor(api.Event_RUN_POD_SANDBOX, api.Event_POD_SANDBOX_STATUS))}, network: &api.PodSandboxNetwork{Ips: []string{"fd00:198:18::9"}}}
	rt, _ := connectRaw(t, e.dial(), raw)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "classic", PluginIdx: "20"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "20-classic to join", func() bool { return e.joined("20-classic") })

	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if ips := rec.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.0.5"}) {
		t.Errorf("pod addresses %v, want only 10-net's 198.18.0.5 (owners %v)", ips, rec.GetOwners())
	}
	if !contains(e.logs.String(), "network extension") {
		t.Errorf("the dropped network is not logged:\n%s", e.logs)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()
	if _, err := rt.UpdatePodSandboxNetwork(ctx, &api.UpdatePodSandboxNetworkRequest{PodId: pod.GetId(), Network: &api.PodSandboxNetwork{Ips: []string{"fd00:198:18::9"}}}); err == nil ||
		!contains(err.Error(), "network extension") {
		t.Errorf("UpdatePodSandboxNetwork from a plugin without the extension = %v, want refused, naming the extension", err)
	}
	if got, _ := store.PodNetwork(ctx, pod.GetId()); !slices.Equal(got.GetNetwork().GetIps(), []string{"198.18.0.5"}) {
		t.Errorf("pod addresses now %v, want 198.18.0.5", got.GetNetwork().GetIps())
	}

	status, err := e.rt.PodSandboxStatus(ctx, pod, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	if ips := status.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.0.5"}) {
		t.Errorf("status has addresses %v, want only 10-net's 198.18.0.5 (owners %v)", ips, status.GetOwners())
	}
}
