package adaptation_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"

	"github.com/nrinet/nrinet/plugin"
)

// nrinetNetStore keeps pod network records in memory, as a runtime's
// sandbox store would.
type nrinetNetStore struct {
	mu   sync.Mutex
	recs map[string]*nri.PodNetworkRecord
	set  chan string // "pod plugin" of each SetPodNetwork
}

func (s *nrinetNetStore) PodNetwork(_ context.Context, id string) (*nri.PodNetworkRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok {
		return nil, fmt.Errorf("pod %q: not found", id)
	}
	return rec, nil
}

func (s *nrinetNetStore) SetPodNetwork(_ context.Context, id, plugin string, rec *nri.PodNetworkRecord) error {
	s.mu.Lock()
	s.recs[id] = rec
	s.mu.Unlock()
	s.set <- id + " " + plugin
	return nil
}

// nrinetNetPlugin gives every pod one address of 198.18.7.0/24 on eth0.
type nrinetNetPlugin struct{ addr string }

func (p nrinetNetPlugin) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*nri.PodSandboxNetwork, error) {
	return &nri.PodSandboxNetwork{Ips: []string{p.addr}}, nil
}

func (p nrinetNetPlugin) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*nri.PodSandboxNetwork, error) {
	return &nri.PodSandboxNetwork{Ips: []string{p.addr}}, nil
}

// TestNrinet_PodNetworkFromPlugins: with pod networks enabled, the adapter
// returns the network a plugin (a real one, over the NRI socket) gives a
// pod, reports the network not ready while the required plugin is away,
// and persists the plugin's later pushes through the runtime's store.
func TestNrinet_PodNetworkFromPlugins(t *testing.T) {
	store := &nrinetNetStore{recs: map[string]*nri.PodNetworkRecord{}, set: make(chan string, 1)}
	sock := filepath.Join(t.TempDir(), "nri.sock")
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithSocketPath(sock), nri.WithPluginPath(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnablePodNetworks(nil); err == nil {
		t.Error("EnablePodNetworks without a store succeeded")
	}
	if err := r.EnablePodNetworks(store, "net"); err != nil {
		t.Fatal(err)
	}
	if ready, why := r.NetworkReady(); ready || !strings.Contains(why, "not started") {
		t.Errorf("NetworkReady before Start = %v, %q", ready, why)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if err := r.EnablePodNetworks(store); err == nil {
		t.Error("EnablePodNetworks after Start succeeded")
	}
	ctx := context.Background()
	pod := &api.PodSandbox{Id: "pod0", Name: "web", Namespace: "default", Uid: "uid0",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/nrinet-compat-test"}}}}

	if ready, why := r.NetworkReady(); ready || !strings.Contains(why, `"net"`) {
		t.Errorf("NetworkReady without the plugin = %v, %q; want not ready, naming it", ready, why)
	}
	if _, err := r.RunPodSandboxNetwork(ctx, &api.RunPodSandboxRequest{Pod: pod}); !errors.Is(err, nri.ErrNetworkNotReady) {
		t.Fatalf("RunPodSandboxNetwork without the required plugin = %v, want ErrNetworkNotReady", err)
	}

	s, err := plugin.New(nrinetNetPlugin{addr: "198.18.7.5/24"}, plugin.WithPluginName("net"), plugin.WithPluginIdx("10"), plugin.WithSocketPath(sock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	waitFor(t, "the network plugin to join", 10*time.Second, networkReady(r))

	rec, err := r.RunPodSandboxNetwork(ctx, &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if ips := rec.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.7.5"}) || rec.GetOwners()["ips/ipv4"] != "10-net" {
		t.Fatalf("record = %v, want 198.18.7.5 owned by 10-net", rec)
	}
	store.mu.Lock()
	store.recs["pod0"] = rec
	store.mu.Unlock()

	if err := s.UpdatePodSandboxNetwork(ctx, "pod0", &nri.PodSandboxNetwork{Ips: []string{"198.18.7.6/24"}}); err != nil {
		t.Fatal(err)
	}
	if got := <-store.set; got != "pod0 10-net" {
		t.Errorf("SetPodNetwork for %q, want pod0 10-net", got)
	}
	pushed, _ := store.PodNetwork(ctx, "pod0")
	if ips := pushed.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.7.6"}) {
		t.Errorf("pushed record has %v, want 198.18.7.6", ips)
	}

	status, err := r.PodSandboxStatus(ctx, pod, pushed, true)
	if err != nil {
		t.Fatal(err)
	}
	if ips := status.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.7.5"}) || len(status.GetStale()) != 0 {
		t.Errorf("status = %v, want the plugin's current 198.18.7.5, nothing stale", status)
	}
}

// TestNrinet_NoPodNetworksByDefault: as upstream's, the adapter does not
// offer the pod network extension unless EnablePodNetworks turned it on,
// so a network plugin that needs it (nri-podnet, nri-cni) refuses to join.
func TestNrinet_NoPodNetworksByDefault(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nri.sock")
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithSocketPath(sock), nri.WithPluginPath(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	s, err := plugin.New(nrinetNetPlugin{addr: "198.18.7.5/24"}, plugin.WithPluginName("net"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(sock), plugin.WithRequiredNetworkExtension())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, plugin.ErrNoNetworkExtension) {
		s.Stop()
		t.Fatalf("a plugin requiring the network extension joined, or failed otherwise: %v", err)
	}
}

// countingNetPlugin is nrinetNetPlugin, counting its RunPodSandboxNetwork
// calls by pod.
type countingNetPlugin struct {
	nrinetNetPlugin
	calls chan string
}

func (p countingNetPlugin) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (*nri.PodSandboxNetwork, error) {
	p.calls <- pod.GetId()
	return p.nrinetNetPlugin.RunPodSandboxNetwork(ctx, pod)
}

// TestNrinet_RunPodSandboxKeepsNetworkPluginsOut: with pod networks
// enabled, the classic RunPodSandbox is for pods whose network the runtime
// sets up itself (containerd's CNI pods on a node switched between its
// network modes): a network plugin is not asked to set one up, while
// RunPodSandboxNetwork asks it as before.
func TestNrinet_RunPodSandboxKeepsNetworkPluginsOut(t *testing.T) {
	store := &nrinetNetStore{recs: map[string]*nri.PodNetworkRecord{}, set: make(chan string, 1)}
	sock := filepath.Join(t.TempDir(), "nri.sock")
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithSocketPath(sock), nri.WithPluginPath(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnablePodNetworks(store); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	net := countingNetPlugin{nrinetNetPlugin{addr: "198.18.7.5/24"}, make(chan string, 64)}
	s, err := plugin.New(net, plugin.WithPluginName("net"), plugin.WithPluginIdx("10"), plugin.WithSocketPath(sock), plugin.WithRequiredNetworkExtension())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	pod := func(id string) *api.PodSandbox {
		return &api.PodSandbox{Id: id, Name: id, Namespace: "default", Uid: id,
			Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/nrinet-compat-" + id}}}}
	}
	// The plugin has joined once a pod of its network gets its address.
	waitFor(t, "the network plugin to join", 10*time.Second, func() error {
		rec, err := r.RunPodSandboxNetwork(ctx, &api.RunPodSandboxRequest{Pod: pod("plugins")})
		if err == nil && len(rec.GetNetwork().GetIps()) == 0 {
			err = fmt.Errorf("no address in %v", rec)
		}
		return err
	})
	// (A call made while the plugin joined reaches it too, late.)

	req := &api.RunPodSandboxRequest{Pod: pod("runtimes")}
	if err := r.RunPodSandbox(ctx, req); err != nil {
		t.Fatal(err)
	}
	if req.GetRuntimeOwnsNetwork() {
		t.Error("RunPodSandbox modified the caller's request")
	}
	for len(net.calls) > 0 {
		if got := <-net.calls; got != "plugins" {
			t.Errorf("RunPodSandbox had the network plugin set up pod %q, whose network the runtime owns", got)
		}
	}
}

// waitFor calls cond every 5 ms until it returns nil, failing the test
// with what it waited for and cond's last error after patience. It is
// testutil.Poll's counterpart: nrinet's tests wait with that, which this
// module, github.com/containerd/nri, cannot import (it is internal to
// nrinet's module), and k8s.io/apimachinery's wait would raise the
// requirements of the runtimes that link this module (test/gomod).
func waitFor(t *testing.T, what string, patience time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for err := cond(); err != nil; err = cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", patience, what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// networkReady is a condition for waitFor: r reports its network ready.
func networkReady(r *nri.Adaptation) func() error {
	return func() error {
		if ready, why := r.NetworkReady(); !ready {
			return errors.New(why)
		}
		return nil
	}
}
