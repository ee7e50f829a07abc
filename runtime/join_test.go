package runtime_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/nrinet/nrinet/api"
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
