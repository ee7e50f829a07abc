package runtime_test

// Tests of the runtime's Start and Stop, and what they race with.

import (
	"context"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// TestLifecycle_StopFromEvictFuncReturns: Stop called from an
// EvictFunc ("may call the Runtime"), which the Runtime runs on its own
// goroutine for evictions sent with UpdateContainers, returns instead of
// waiting for its own goroutine.
func TestLifecycle_StopFromEvictFuncReturns(t *testing.T) {
	var rt *runtime.Runtime
	var rtMu sync.Mutex
	stopped := make(chan error, 1)
	evict := func(context.Context, string, []*api.ContainerEviction) error {
		rtMu.Lock()
		r := rt
		rtMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stopped <- r.Stop(ctx)
		return nil
	}
	e := newEnv(t, runtime.WithEvictFunc(evict))
	rtMu.Lock()
	rt = e.rt
	rtMu.Unlock()
	s := e.startPlugin(newRecorder(), "10", "evicter")
	// The answer may be lost to the Stop it sets off: only the delivery
	// of the eviction matters here.
	if _, err := s.UpdateContainers(context.Background(), nil, []*api.ContainerEviction{{ContainerId: "ctr-1", Reason: "test"}}); err != nil {
		t.Logf("UpdateContainers: %v", err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop called from the EvictFunc did not return within 5 s (its context allowed 1 s)")
	}
}

// TestLifecycle_StopHonoursItsContextWithAFrozenPlugin: Stop returns
// by its context's deadline even when a plugin stopped reading and its
// socket buffer is full, instead of waiting in ttrpc's send of Shutdown
// for the connection's write timeout.
func TestLifecycle_StopHonoursItsContextWithAFrozenPlugin(t *testing.T) {
	const requestTimeout = 4 * time.Second // also the write timeout
	e := newEnv(t, runtime.WithStatusTimeout(100*time.Millisecond), runtime.WithRequestTimeout(requestTimeout),
		runtime.WithStatusCacheTTL(0))
	p := e.startNetPlugin(netScript{Name: "frozen", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := bigPod(1, 256<<10, 1024)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	for range 12 { // more than the socket buffers hold
		e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	e.rt.Stop(ctx)
	// Generous: the context allowed 200 ms; the write timeout is 4 s.
	if took := time.Since(start); took > requestTimeout/2 {
		t.Errorf("Stop with a 200 ms context took %v with a frozen plugin", took.Round(time.Millisecond))
	}
}

// TestLifecycle_FrozenPluginIsDisconnectedAtTheDeadline: a request
// stuck sending to a plugin that stopped reading returns by its deadline
// and a grace, not the connection's write timeout, and the plugin is
// disconnected although its failure policy keeps late plugins: nothing
// drains its connection.
func TestLifecycle_FrozenPluginIsDisconnectedAtTheDeadline(t *testing.T) {
	const requestTimeout = 300 * time.Millisecond
	e := newEnv(t, runtime.WithRequestTimeout(requestTimeout))
	p := e.startNetPlugin(netScript{Name: "frozen", Idx: "10", Network: pj(v4net("198.18.0.5")), KeepConnected: true})
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	var worst time.Duration
	for i := range 24 { // 6 MiB: more than the socket buffers hold
		start := time.Now()
		// Late, kept connected, and not failing the request: the pod
		// goes on without it (no required network plugin here).
		e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: bigPod(i, 256<<10, 1024)})
		worst = max(worst, time.Since(start))
		if !e.joined("10-frozen") {
			break
		}
	}
	if e.joined("10-frozen") {
		t.Fatal("a plugin that stopped reading is still connected after 6 MiB of requests")
	}
	// Generous: the deadline and its grace are 330 ms.
	if worst > 10*requestTimeout {
		t.Errorf("a request took %v with a %v deadline", worst.Round(time.Millisecond), requestTimeout)
	}
}

// TestLifecycle_StopWaitsForAnAbandonedStatusRound: a status round
// whose caller gave up still counts: Stop waits for it, so nothing calls
// into the Observer or the logger after Stop returned.
func TestLifecycle_StopWaitsForAnAbandonedStatusRound(t *testing.T) {
	obs := &statusAbandonObserver{entered: make(chan struct{}), stopped: make(chan struct{}), afterReturn: make(chan bool, 1)}
	e := newEnv(t, runtime.WithObserver(obs), runtime.WithStatusTimeout(200*time.Millisecond), runtime.WithStatusCacheTTL(0))
	e.startNetPlugin(netScript{Name: "hang", Idx: "10", Network: pj(v4net("198.18.0.5")), StatusSleep: time.Hour})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.rt.PodSandboxStatus(ctx, pod, last, false); err == nil {
		t.Fatal("the status call did not give up")
	}
	<-obs.entered // the abandoned round goes on, in the Observer
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	e.rt.Stop(sctx)
	close(obs.stopped)
	if <-obs.afterReturn {
		t.Error("Stop returned while a status round the Runtime started was still running (in Observer.StatusStale)")
	}
}

// TestLifecycle_StartRacesStop: Stop running while Start is still
// setting up its accept loop waits for that loop, without a data race
// (run with -race; 6,000 rounds).
func TestLifecycle_StartRacesStop(t *testing.T) {
	dir := t.TempDir()
	for range 6000 {
		rt, err := runtime.New("test", "v1", runtime.WithSocketPath(dir+"/nri/nri.sock"), runtime.WithPluginPath(""))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { rt.Start(context.Background()) })
		wg.Go(func() { rt.Stop(context.Background()) })
		wg.Wait()
		rt.Stop(context.Background())
	}
}

// TestLifecycle_StopRacesNothing: Stop while status rounds refresh in the
// background, a plugin connects and a request runs; run with -race. Every
// goroutine the Runtime starts must be counted before Stop waits.
func TestLifecycle_StopRacesNothing(t *testing.T) {
	for range 20 {
		rt, err := runtime.New("test", "v1", runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""),
			runtime.WithStatusCacheTTL(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pod := netPod(1)
		last := &api.PodNetworkRecord{Network: v4net("198.18.0.5")}
		rt.PodSandboxStatus(context.Background(), pod, last, false) // fills the cache
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					rt.PodSandboxStatus(context.Background(), pod, last, false)
				}
			})
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, b := net.Pipe()
				rt.Connect(context.Background(), a)
				b.Close()
			}
		})
		rt.Stop(context.Background())
		close(stop)
		wg.Wait()
	}
}
