package adaptation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"github.com/nrinet/nrinet/plugin"
)

// count counts the lines of level that contain every part.
func (l *nrinetLogs) count(level string, parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.HasPrefix(line, level+" ") && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

func (l *nrinetLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// podNoter is a plugin on this module's stub, with upstream's interfaces,
// that reports its Synchronize and the pods it is told to run.
type podNoter struct {
	synced chan struct{}
	ran    chan string
}

func (p *podNoter) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	close(p.synced)
	return nil, nil
}

func (p *podNoter) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.ran <- pod.GetId()
	return nil
}

// TestNrinet_PluginsOfOneNameAllJoin: plugins on this module's stub may
// share a name, as on upstream NRI, whose runtime keeps every connection.
// containerd's own integration tests (integration/nri_test.go) start a
// plugin named 00-mock-plugin in each test and never stop it, so each
// later test's plugin of that name must join and get its pods' events.
// Run against containerd on nrinet (make containerd-integration), every
// test after the first failed: the runtime refused the second connection
// ("plugin "00-mock-plugin" is already connected"). Checked with pod
// networks off (containerd's network mode cni) and on (network mode nri,
// with a network plugin connected, where the extension is offered): the
// stub declines the extension, as upstream's does, and a plugin without
// it has no part in pod networks.
func TestNrinet_PluginsOfOneNameAllJoin(t *testing.T) {
	for _, podNetworks := range []bool{false, true} {
		t.Run(fmt.Sprintf("pod networks %v", podNetworks), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sock := filepath.Join(t.TempDir(), "nri.sock")
			r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithSocketPath(sock), nri.WithPluginPath(""))
			if err != nil {
				t.Fatal(err)
			}
			if podNetworks {
				store := &nrinetNetStore{recs: map[string]*nri.PodNetworkRecord{}, set: make(chan string, 16)}
				if err := r.EnablePodNetworks(store, "net"); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Stop)
			if podNetworks {
				s, err := plugin.New(nrinetNetPlugin{addr: "198.18.7.5/24"}, plugin.WithPluginName("net"), plugin.WithPluginIdx("10"), plugin.WithSocketPath(sock))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Stop)
				waitFor(t, "the network plugin to join", 20*time.Second, networkReady(r))
			}

			logs := captureLogs(t)
			var noters []*podNoter
			for range 2 {
				p := &podNoter{synced: make(chan struct{}), ran: make(chan string, 1)}
				s, err := stub.New(p, stub.WithPluginName("mock-plugin"), stub.WithPluginIdx("00"), stub.WithSocketPath(sock))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Stop)
				select {
				case <-p.synced:
				case <-ctx.Done():
					t.Fatal("plugin not synchronized")
				}
				noters = append(noters, p)
			}

			// Both join, or the second is refused.
			waitFor(t, "both connections of 00-mock-plugin to join", 20*time.Second, func() error {
				if logs.has("warn", "00-mock-plugin", "already connected") {
					t.Fatalf("the second connection of 00-mock-plugin was refused:\n%s", logs)
				}
				if n := logs.count("info", "plugin joined", "plugin=00-mock-plugin"); n < 2 {
					return fmt.Errorf("%d joined:\n%s", n, logs)
				}
				return nil
			})

			pod := &api.PodSandbox{Id: "pod0", Name: "web", Namespace: "default", Uid: "uid0",
				Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/nrinet-compat-test"}}}}
			if podNetworks {
				rec, err := r.RunPodSandboxNetwork(ctx, &api.RunPodSandboxRequest{Pod: pod})
				if err != nil {
					t.Fatal(err)
				}
				if owner := rec.GetOwners()["ips/ipv4"]; owner != "10-net" {
					t.Errorf("the pod's address is owned by %q, want 10-net", owner)
				}
			} else if err := r.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			for i, p := range noters {
				select {
				case id := <-p.ran:
					if id != pod.GetId() {
						t.Errorf("connection %d of 00-mock-plugin ran pod %q, want %q", i+1, id, pod.GetId())
					}
				case <-time.After(5 * time.Second):
					t.Errorf("connection %d of 00-mock-plugin did not get the pod's RunPodSandbox", i+1)
				}
			}
		})
	}
}
