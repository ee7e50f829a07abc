package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// Tests for what a runtime such as containerd needs of the library beyond
// the events: callback-style Synchronize, sync blocks, evictions in
// responses, ttrpc options and the optional observer hooks.

// syncUpdater answers Synchronize with an update of the first container.
type syncUpdater struct{ *recorder }

func (s syncUpdater) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	s.recorder.Synchronize(ctx, pods, ctrs)
	if len(ctrs) == 0 {
		return nil, nil
	}
	u := &api.ContainerUpdate{ContainerId: ctrs[0].GetId()}
	u.SetLinuxCPUShares(512)
	return []*api.ContainerUpdate{u}, nil
}

func TestRuntime_SyncCallback(t *testing.T) {
	pod := testPod(1)
	var (
		mu      sync.Mutex // the runtime's own lock, held across the plugin's Synchronize
		calls   int
		updates []*api.ContainerUpdate
		second  error
	)
	e := newEnv(t, runtime.WithSyncCallback(func(ctx context.Context, cb runtime.SyncCB) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		u, err := cb(ctx, []*api.PodSandbox{pod}, []*api.Container{testContainer(pod, 1), testContainer(pod, 2)})
		if err != nil {
			return err
		}
		updates = u
		_, second = cb(ctx, nil, nil) // a runtime's mistake: refused
		return nil
	}), runtime.WithUpdateFunc(func(context.Context, string, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
		t.Error("updates of a Synchronize driven by the runtime went to the UpdateFunc")
		return nil, nil
	}))
	rec := newRecorder()
	e.startPlugin(syncUpdater{rec}, "10", "sync")
	mu.Lock()
	defer mu.Unlock()
	if np, nc := rec.synced(); calls != 1 || np != 1 || nc != 2 {
		t.Errorf("callback called %d times, plugin synchronized %d pods and %d containers; want 1, 1, 2", calls, np, nc)
	}
	if len(updates) != 1 || updates[0].GetContainerId() != "ctr-id-1" {
		t.Errorf("the callback got updates %v, want the plugin's one", updates)
	}
	if second == nil || !strings.Contains(second.Error(), "called twice") {
		t.Errorf("second call of the callback = %v, want an error", second)
	}
}

func TestRuntime_SyncCallbackFailureFailsTheJoin(t *testing.T) {
	e := newEnv(t, runtime.WithSyncCallback(func(context.Context, runtime.SyncCB) error {
		return errors.New("listing containers failed")
	}))
	s, err := plugin.New(newRecorder(), plugin.WithPluginName("p"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitFor(t, "the failed join to be logged", func() bool {
		return strings.Contains(e.logs.String(), "listing containers failed")
	})
	if e.joined("10-p") {
		t.Error("the plugin joined although the runtime's synchronization failed")
	}
}

func TestRuntime_SyncFuncAndCallbackExclusive(t *testing.T) {
	_, err := runtime.New("rt", "v1", runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return nil, nil, nil }),
		runtime.WithSyncCallback(func(context.Context, runtime.SyncCB) error { return nil }))
	if err == nil {
		t.Fatal("both WithSyncFunc and WithSyncCallback were accepted")
	}
}

// TestRuntime_BlockPluginSync: a plugin that begins to join while a block
// is held reads the runtime's state only once it is lifted, and so sees
// the pod added under the block.
func TestRuntime_BlockPluginSync(t *testing.T) {
	var (
		lifted atomic.Bool
		early  atomic.Bool // the state was read under the block
		mu     sync.Mutex
		pods   []*api.PodSandbox
	)
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		if !lifted.Load() {
			early.Store(true)
		}
		mu.Lock()
		defer mu.Unlock()
		return pods, nil, nil
	}))
	block := e.rt.BlockPluginSync()
	rec := newRecorder()
	s, err := plugin.New(rec, plugin.WithPluginName("late"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil { // configured: now joining
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	// A runtime's change under the block: the pod becomes part of its state.
	mu.Lock()
	pods = append(pods, testPod(1))
	mu.Unlock()
	// Not a timing assertion: a join that ignored the block would have read
	// the state by now; one that honours it cannot have, and the wait ends
	// without it.
	eventually(200*time.Millisecond, func() bool { return e.joined("10-late") })
	lifted.Store(true)
	block.Unblock()
	block.Unblock() // a second time: nothing
	waitFor(t, "the plugin to join", func() bool { return e.joined("10-late") })
	if early.Load() {
		t.Error("the joining plugin read the runtime's state while the block was held")
	}
	if np, _ := rec.synced(); np != 1 {
		t.Errorf("plugin synchronized %d pods, want the one added under the block", np)
	}
}

func TestRuntime_EvictionsInResponses(t *testing.T) {
	e := newEnv(t) // no EvictFunc: the response carries them
	e.startPlugin(evictor{"old-1"}, "10", "a")
	pod := testPod(1)
	rsp, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := rsp.GetEvict(); len(got) != 1 || got[0].GetContainerId() != "old-1" {
		t.Errorf("CreateContainer evictions = %v, want old-1", got)
	}
	up, err := e.rt.UpdateContainer(context.Background(), &api.UpdateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := up.GetEvict(); len(got) != 1 || got[0].GetContainerId() != "old-1" {
		t.Errorf("UpdateContainer evictions = %v, want old-1", got)
	}
}

func TestRuntime_TTRPCOptions(t *testing.T) {
	var served, called sync.Map
	e := newEnv(t, runtime.WithTTRPCOptions(
		[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, inv ttrpc.Invoker) error {
			called.Store(info.FullMethod, true)
			return inv(ctx, req, rsp)
		})},
		[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(func(ctx context.Context, um ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (any, error) {
			served.Store(info.FullMethod, true)
			return m(ctx, um)
		})},
	))
	e.startPlugin(newRecorder(), "10", "seen")
	for _, tc := range []struct {
		what string
		m    *sync.Map
		key  string
	}{
		{"server interceptor", &served, "/nri.pkg.api.v1alpha1.Runtime/RegisterPlugin"},
		{"client interceptor", &called, "/nri.pkg.api.v1alpha1.Plugin/Configure"},
	} {
		if _, ok := tc.m.Load(tc.key); !ok {
			t.Errorf("the %s did not see %s", tc.what, tc.key)
		}
	}
}

// hookObserver records what the optional observer interfaces report.
type hookObserver struct {
	countingObserver
	mu          sync.Mutex
	adjustments []string
	counts      []int
}

func (o *hookObserver) PluginAdjustment(plugin, method string, adjust *api.ContainerAdjustment, updates, evictions int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.adjustments = append(o.adjustments, fmt.Sprintf("%s %s annotations=%d updates=%d evictions=%d",
		plugin, method, len(adjust.GetAnnotations()), updates, evictions))
}

func (o *hookObserver) PluginCount(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts = append(o.counts, n)
}

func TestRuntime_ObserverHooks(t *testing.T) {
	obs := &hookObserver{}
	e := newEnv(t, runtime.WithObserver(obs))
	s := e.startPlugin(evictor{"old-1"}, "10", "a")
	pod := testPod(1)
	ctr := testContainer(pod, 1)
	ctr.Annotations = map[string]string{"conflict": "yes"}
	if _, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	waitFor(t, "the plugin to leave", func() bool { return !e.joined("10-a") })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := []string{"10-a CreateContainer annotations=1 updates=0 evictions=1"}; fmt.Sprint(obs.adjustments) != fmt.Sprint(want) {
		t.Errorf("adjustments = %v, want %v", obs.adjustments, want)
	}
	if fmt.Sprint(obs.counts) != "[1 0]" {
		t.Errorf("plugin counts = %v, want [1 0]", obs.counts)
	}
}

func TestRuntime_NRIVersionAndPluginConnected(t *testing.T) {
	e := newEnv(t, runtime.WithNRIVersion("v9.8.7"))
	s := e.startPlugin(newRecorder(), "10", "ver")
	if info, _ := s.Runtime(); info.NRIVersion != "v9.8.7" {
		t.Errorf("plugin was told NRI version %q, want v9.8.7", info.NRIVersion)
	}
	if !e.rt.PluginConnected("10-ver") || e.rt.PluginConnected("ver") || e.rt.PluginConnected("20-ver") {
		t.Error("PluginConnected does not match the plugin by its full name")
	}
	s.Stop()
	waitFor(t, "the plugin to be gone", func() bool { return !e.rt.PluginConnected("10-ver") })
}

// TestRuntime_AwaitJoins: it returns once a plugin that was joining has
// joined.
func TestRuntime_AwaitJoins(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, runtime.WithSyncFunc(func(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		close(entered)
		<-release // the join is held here
		return nil, nil, nil
	}))
	if err := e.rt.AwaitJoins(context.Background()); err != nil {
		t.Fatalf("AwaitJoins with nobody joining = %v", err)
	}
	s, err := plugin.New(newRecorder(), plugin.WithPluginName("slow"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil { // configured: joining
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	<-entered // the plugin is joining
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err = e.rt.AwaitJoins(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitJoins while the plugin's join is held = %v, want it to wait", err)
	}
	close(release)
	if err := e.rt.AwaitJoins(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.joined("10-slow") {
		t.Error("AwaitJoins returned before the plugin joined")
	}
}
