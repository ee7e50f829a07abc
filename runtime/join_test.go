package runtime_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// ledger is a plugin that keeps, per pod, what it learned and in which
// order: "sync" (in Synchronize), "run", "stop", "remove".
type ledger struct {
	mu   sync.Mutex
	pods map[string][]string
}

func newLedger() *ledger { return &ledger{pods: map[string][]string{}} }

func (l *ledger) note(id, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods[id] = append(l.pods[id], what)
}

func (l *ledger) Synchronize(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, p := range pods {
		l.note(p.GetId(), "sync")
	}
	return nil, nil
}

func (l *ledger) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.note(pod.GetId(), "run")
	return nil
}

func (l *ledger) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.note(pod.GetId(), "stop")
	return nil
}

func (l *ledger) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.note(pod.GetId(), "remove")
	return nil
}

// livePods is a runtime's pod list: a pod is listed from the moment its
// RunPodSandbox reaches the plugins (see lister) until its
// StopPodSandbox, so that a joining plugin may find it listed while its
// creation is in flight, as with nrinetd.
type livePods struct {
	mu   sync.Mutex
	pods map[string]*api.PodSandbox
}

func (l *livePods) set(p *api.PodSandbox, live bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if live {
		l.pods[p.GetId()] = p
	} else {
		delete(l.pods, p.GetId())
	}
}

// lister is the first plugin: it lists each pod as its RunPodSandbox
// begins.
type lister struct{ live *livePods }

func (l lister) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.live.set(pod, true)
	return nil
}

func (l *livePods) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Collect(maps.Values(l.pods)), nil, nil
}

// TestJoin_EveryPodOnce: plugins join one after another while pods are
// created and removed all the time; each learns of every pod at most
// once, in Synchronize or as RunPodSandbox, hears of a pod's stop and
// removal only after that (or, for a pod stopped before it joined, only
// those), and has every pod that lives on from its Synchronize.
func TestJoin_EveryPodOnce(t *testing.T) {
	live := &livePods{pods: map[string]*api.PodSandbox{}}
	e := newEnv(t, runtime.WithSyncFunc(live.list))
	t.Cleanup(func() {
		if t.Failed() {
			l := e.logs.String()
			t.Logf("logs (tail):\n%s", l[max(0, len(l)-6000):])
		}
	})
	e.startPlugin(lister{live}, "00", "lister")
	ctx := context.Background()
	// Long-lived pods, created before any plugin joins.
	for n := range 20 {
		pod := testPod(1000 + n)
		if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				pod := testPod(10_000*(w+1) + n)
				if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
					t.Error(err)
					return
				}
				if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
					t.Error(err)
					return
				}
				live.set(pod, false)
				if err := e.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var ledgers []*ledger
	for i := range 8 {
		l := newLedger()
		ledgers = append(ledgers, l)
		e.startPlugin(l, fmt.Sprintf("%02d", 10+i), fmt.Sprint("joiner", i))
	}
	close(stop)
	workers.Wait()

	for i, l := range ledgers {
		l.mu.Lock()
		for id, seen := range l.pods {
			created := slices.IndexFunc(seen, func(s string) bool { return s == "sync" || s == "run" })
			if created < 0 {
				// A pod stopped before the plugin joined: like upstream,
				// its later stop or removal may still reach the plugin.
				continue
			}
			if created > 0 {
				t.Errorf("joiner%d: pod %s: heard of its end before it: %v", i, id, seen)
			}
			if slices.Contains(seen[created+1:], "sync") || slices.Contains(seen[created+1:], "run") {
				t.Errorf("joiner%d: pod %s: learned of it twice: %v", i, id, seen)
			}
		}
		for n := range 20 {
			if id := testPod(1000 + n).GetId(); len(l.pods[id]) != 1 || l.pods[id][0] != "sync" {
				t.Errorf("joiner%d: long-lived pod %s seen as %v, want once in Synchronize", i, id, l.pods[id])
			}
		}
		l.mu.Unlock()
	}
}

// countJoined counts the connections of that full name in the dispatch
// list.
func (e *env) countJoined(name string) int {
	n := 0
	for _, p := range e.rt.Plugins() {
		if p.Name == name {
			n++
		}
	}
	return n
}

// TestJoin_PluginsWithoutTheExtensionShareAName: plugins that do not take
// the pod network extension may share a name, as on upstream NRI, whose
// runtime keeps every connection: containerd's own integration tests
// (integration/nri_test.go) start a plugin named 00-mock-plugin in every
// test and leave it connected, and each test's plugin must still join
// and get its events. Both connections join and both get a pod's
// RunPodSandbox, on a runtime without the extension (containerd in
// network mode cni) and for plugins that decline it (compat/nri's stub).
func TestJoin_PluginsWithoutTheExtensionShareAName(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runtime    []runtime.Option
		pluginOpts []plugin.Option
	}{
		{"runtime without the extension", []runtime.Option{runtime.WithoutNetworkExtension()}, nil},
		{"plugins declining the extension", nil, []plugin.Option{plugin.WithoutNetworkExtension()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.runtime...)
			first, second := newLedger(), newLedger()
			e.startPlugin(first, "00", "mock", tc.pluginOpts...)
			e.startJoining(second, "00", "mock", tc.pluginOpts...)
			if !eventually(10*time.Second, func() bool { return e.countJoined("00-mock") == 2 }) {
				t.Fatalf("%d connections named 00-mock joined, want 2; logs:\n%s", e.countJoined("00-mock"), e.logs)
			}
			pod := testPod(1)
			if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			for i, l := range []*ledger{first, second} {
				if got := l.seenOf(pod.GetId()); !slices.Equal(got, []string{"run"}) {
					t.Errorf("connection %d of 00-mock saw %v of the pod, want [run]", i+1, got)
				}
			}
		})
	}
}

// TestJoin_NetworkExtensionKeepsANameExclusive: a pod's network parts,
// its record's owners and its network pushes go by plugin name, so a
// plugin that took the pod network extension holds its name alone: no
// second connection joins under it, and it does not join under the name
// of a connected plugin without the extension either.
func TestJoin_NetworkExtensionKeepsANameExclusive(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(newLedger(), "10", "net")
	e.startJoining(newLedger(), "10", "net", plugin.WithoutNetworkExtension())
	e.startPlugin(newLedger(), "20", "classic", plugin.WithoutNetworkExtension())
	e.startJoining(newLedger(), "20", "classic")
	// Each refusal is logged twice (the failed join, then the
	// disconnection it causes): count the failed joins.
	refused := func() int {
		n := 0
		for l := range strings.Lines(e.logs.String()) {
			if strings.Contains(l, `msg="plugin failed to join"`) && strings.Contains(l, "is already connected") {
				n++
			}
		}
		return n
	}
	if !eventually(10*time.Second, func() bool { return refused() >= 2 }) || refused() != 2 {
		t.Fatalf("want both second connections refused as already connected; logs:\n%s", e.logs)
	}
	for _, name := range []string{"10-net", "20-classic"} {
		if n := e.countJoined(name); n != 1 {
			t.Errorf("%d connections named %s joined, want 1", n, name)
		}
	}
}
