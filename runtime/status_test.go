package runtime_test

// Tests of PodSandboxStatus: its deadline, its cache and stale parts.

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// TestStatus_CacheDoesNotAnswerWithAnOlderNetwork: a status call
// that comes between a plugin's network update being persisted and the
// status cache being dropped is never answered with the network from
// before the update (which a runtime that persists a changed record would
// write back over the update).
func TestStatus_CacheDoesNotAnswerWithAnOlderNetwork(t *testing.T) {
	store := &hookStore{memStore: newMemStore()}
	e := newEnv(t, runtime.WithPodNetworkStore(store), runtime.WithStatusCacheTTL(time.Minute))
	h := &switchableNet{net: v4net("198.18.0.5")}
	s := e.startPlugin(h, "10", "net")
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()
	if _, err := e.rt.PodSandboxStatus(context.Background(), pod, rec, false); err != nil { // cached
		t.Fatal(err)
	}

	seenCh := make(chan *api.PodNetworkRecord, 1)
	store.setHook(func(_ string, persisted *api.PodNetworkRecord) {
		done := make(chan struct{})
		go func() { // the kubelet asks for the pod's status, with the new record
			defer close(done)
			rec, _ := e.rt.PodSandboxStatus(context.Background(), pod, persisted, false)
			seenCh <- rec
		}()
		<-done
	})
	h.set(v4net("198.18.0.7"))
	if err := s.UpdatePodSandboxNetwork(context.Background(), pod.GetId(), v4net("198.18.0.7")); err != nil {
		t.Fatal(err)
	}
	seen := <-seenCh
	if ips := seen.GetNetwork().GetIps(); !slices.Equal(ips, []string{"198.18.0.7"}) {
		t.Errorf("PodSandboxStatus with last = the updated record (198.18.0.7; the plugin also reports 198.18.0.7) answered %v", ips)
	}
}

// TestStatus_DeadlineHoldsWithAFrozenPlugin: a plugin that stopped
// reading (SIGSTOP) fills its socket buffer; a status round must still
// answer by its deadline instead of waiting in ttrpc's send until the
// write timeout breaks the connection.
func TestStatus_DeadlineHoldsWithAFrozenPlugin(t *testing.T) {
	const (
		statusTimeout = 100 * time.Millisecond
		writeTimeout  = 4 * time.Second // the request timeout bounds writes
	)
	e := newEnv(t, runtime.WithStatusTimeout(statusTimeout), runtime.WithRequestTimeout(writeTimeout), runtime.WithStatusCacheTTL(0))
	p := e.startNetPlugin(netScript{Name: "frozen", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := bigPod(1, 256<<10, 1024) // each request carries 256 KiB
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	var worst time.Duration
	for range 12 { // 3 MiB: more than the socket buffers hold
		start := time.Now()
		rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
		worst = max(worst, time.Since(start))
		if err != nil || rec.GetNetwork().GetIps()[0] != "198.18.0.5" {
			t.Fatalf("PodSandboxStatus = %v, %v; want the stored network", rec, err)
		}
	}
	// Generous: the deadline is 100 ms; waiting for the write timeout
	// would take 4 s.
	if worst > writeTimeout/2 {
		t.Errorf("a status round took %v with a %v deadline", worst, statusTimeout)
	}
}

// TestStatus_BadRouteIsStale: a plugin whose status answer
// routes through an interface the pod does not have keeps its stored part,
// marked stale; the status call does not fail.
func TestStatus_BadRouteIsStale(t *testing.T) {
	e := newEnv(t)
	good := &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24"}}}}
	bad := &api.PodSandboxNetwork{
		Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24"}}},
		Routes:     []*api.NetworkRoute{{Destination: "198.18.9.0/24", Interface: "eth9"}},
	}
	e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(good), StatusNetwork: pj(bad)})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	if err != nil {
		t.Fatalf("PodSandboxStatus failed because of a plugin's answer: %v", err)
	}
	if len(rec.GetNetwork().GetRoutes()) != 0 || !strings.Contains(rec.GetStale()["10-net"], `no interface "eth9"`) {
		t.Errorf("status = %v, want the stored part, 10-net stale for its route via eth9", rec)
	}
}
