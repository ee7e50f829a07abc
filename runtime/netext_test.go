package runtime_test

import (
	"context"
	"errors"
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

// wireRecorder is a plugin on the wire that records the RunPodSandbox
// requests it gets and returns its network whatever they say; with ext it
// answers Configure with the pod network extension.
type wireRecorder struct {
	classicRaw
	ext bool
	got chan *api.RunPodSandboxRequest
}

func (p *wireRecorder) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rsp := &api.ConfigureResponse{Events: p.events}
	if p.ext {
		rsp.NetworkExtension = &api.NetworkExtension{Version: 1}
	}
	return rsp, nil
}

func (p *wireRecorder) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	p.got <- req
	return p.classicRaw.RunPodSandbox(ctx, req)
}

// countingNet is a network plugin that counts its RunPodSandboxNetwork
// calls.
type countingNet struct {
	netHandler
	calls chan string
}

func (h countingNet) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	h.calls <- pod.GetId()
	return h.netHandler.RunPodSandboxNetwork(ctx, pod)
}

// TestRuntime_RuntimeOwnedNetwork: a pod whose network the runtime set up
// itself (runtime_owns_network, a runtime running pods of its own network
// besides the plugins') is not the plugins' to network. Network plugins on
// the plugin library are not asked for it, a network a plugin returns for
// it is ignored, and neither the required network plugins' connection nor
// their addresses are asked for, as for a host-network pod; plugins with
// the extension see the flag, plugins without it do not.
func TestRuntime_RuntimeOwnedNetwork(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store), runtime.WithRequiredNetworkPlugins("podnet"))
	lib := countingNet{netHandler{v4net("198.18.0.5")}, make(chan string, 4)}
	e.startPlugin(lib, "10", "net")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raws := map[string]*wireRecorder{}
	for _, tc := range []struct {
		name string
		ext  bool
	}{{"ext", true}, {"classic", false}} {
		raw := &wireRecorder{
			classicRaw: classicRaw{rawPlugin: rawPlugin{events: int32(api.MaskFor(api.Event_RUN_POD_SANDBOX))}, network: v4net("198.18.0.9")},
			ext:        tc.ext, got: make(chan *api.RunPodSandboxRequest, 4),
		}
		rt, _ := connectRaw(t, e.dial(), raw)
		if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: tc.name, PluginIdx: "20"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "20-"+tc.name+" to join", func() bool { return e.joined("20-" + tc.name) })
		raws[tc.name] = raw
	}

	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod, RuntimeOwnsNetwork: true})
	if err != nil {
		t.Fatalf("RunPodSandbox of a pod whose network the runtime owns, the required network plugin away: %v", err)
	}
	if rec != nil {
		t.Errorf("RunPodSandbox returned the network %v for a pod whose network the runtime owns, want none", rec)
	}
	select {
	case id := <-lib.calls:
		t.Errorf("RunPodSandboxNetwork of 10-net called for pod %s, whose network the runtime owns", id)
	default:
	}
	for name, want := range map[string]bool{"ext": true, "classic": false} {
		if got := (<-raws[name].got).GetRuntimeOwnsNetwork(); got != want {
			t.Errorf("20-%s got runtime_owns_network %v, want %v", name, got, want)
		}
	}
	if !contains(e.logs.String(), "pod whose network the runtime owns") {
		t.Errorf("the network 20-ext returned is not logged as ignored:\n%s", e.logs)
	}

	// Any other pod is the plugins': the required plugin is missing.
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: netPod(2)}); !errors.Is(err, runtime.ErrNetworkNotReady) {
		t.Errorf("RunPodSandbox of a pod the plugins network, the required plugin away = %v, want ErrNetworkNotReady", err)
	}
}
