package runtime_test

// Reviewer's tests: each reproduces one defect of the runtime core found in
// review. They are expected to fail until the defect is fixed.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// holdingSync is a ledger whose Synchronize waits until released, so that
// a test can act while the plugin is joining.
type holdingSync struct {
	*ledger
	entered chan struct{}
	release chan struct{}
}

func newHoldingSync() *holdingSync {
	return &holdingSync{ledger: newLedger(), entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdingSync) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	close(h.entered)
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.ledger.Synchronize(ctx, pods, ctrs)
}

// startJoining starts a plugin on the library without waiting for it to
// join: Start returns once the runtime configured it.
func (e *env) startJoining(h any, idx, name string, opts ...plugin.Option) *plugin.Stub {
	e.t.Helper()
	base := []plugin.Option{
		plugin.WithPluginName(name), plugin.WithPluginIdx(idx),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"),
	}
	s, err := plugin.New(h, append(base, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Stop)
	return s
}

// blockingRun is a plugin whose RunPodSandbox waits until released, then
// fails with err (or succeeds if err is nil), recording what it saw.
type blockingRun struct {
	*ledger
	entered chan string
	release chan struct{}
	err     error
}

func (b *blockingRun) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	b.note(pod.GetId(), "run")
	b.entered <- pod.GetId()
	<-b.release
	return b.err
}

// seenOf returns what a ledger recorded for a pod.
func (l *ledger) seenOf(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pods[id])
}

// eventually polls cond for up to d; it reports whether cond held.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// TestReview_JoinerThatCaughtUpOnAFailedPodIsCleanedUp: a plugin that
// joins while a RunPodSandbox is in flight receives the pod's creation in
// its catch-up and then enters the dispatch list; when the RunPodSandbox
// then fails, cleanupPod tells only the plugins of the request's own list
// to stop and remove the pod (and queues for joiners, which it no longer
// is). The joiner keeps a pod that never came to exist: a network plugin
// leaks its address until it restarts.
func TestReview_JoinerThatCaughtUpOnAFailedPodIsCleanedUp(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(10*time.Second))
	failing := &blockingRun{ledger: newLedger(), entered: make(chan string, 1), release: make(chan struct{}), err: errors.New("no room")}
	e.startPlugin(failing, "10", "failing")
	released := false
	defer func() {
		if !released {
			close(failing.release)
		}
	}()

	joiner := newHoldingSync()
	e.startJoining(joiner, "20", "joiner")
	<-joiner.entered // the joiner is registered as joining and synchronizes

	pod := testPod(1)
	runErr := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
		runErr <- err
	}()
	<-failing.entered // the request began: its creation is queued for the joiner

	close(joiner.release)
	waitFor(t, "the joiner to join", func() bool { return e.joined("20-joiner") })
	if got := joiner.seenOf(pod.GetId()); !slices.Equal(got, []string{"run"}) {
		t.Fatalf("the joiner saw %v of the pod, want its creation from the catch-up", got)
	}

	close(failing.release) // the request fails now
	released = true
	if err := <-runErr; err == nil {
		t.Fatal("RunPodSandbox succeeded; the test needs it to fail")
	}
	if !eventually(2*time.Second, func() bool {
		got := joiner.seenOf(pod.GetId())
		return slices.Contains(got, "stop") && slices.Contains(got, "remove")
	}) {
		t.Errorf("the joiner was told of the pod's creation but never of its cleanup after RunPodSandbox failed: it saw %v",
			joiner.seenOf(pod.GetId()))
	}
}

// lateRun is a plugin whose RunPodSandbox finishes (allocates) only after
// the request timeout, when released.
type lateRun struct {
	*ledger
	release chan struct{}
}

func (l *lateRun) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	<-l.release
	l.note(pod.GetId(), "run")
	return nil
}

// TestReview_LatePluginKeptConnectedIsCleanedUp: a plugin whose failure
// policy keeps it connected after a timeout is skipped when it is late on
// RunPodSandbox, and stays. If the pod then fails (a later plugin refuses
// it), cleanupPod tells only the plugins that answered: the late plugin,
// which goes on setting the pod up (as a plugin abandoned by the caller
// may, which is cleaned up), never hears of the pod again.
func TestReview_LatePluginKeptConnectedIsCleanedUp(t *testing.T) {
	for _, policy := range []*api.FailurePolicy{
		{KeepConnected: true},
		{KeepConnected: true, FailRequest: true},
	} {
		t.Run(policy.String(), func(t *testing.T) {
			e := newEnv(t, runtime.WithRequestTimeout(300*time.Millisecond))
			late := &lateRun{ledger: newLedger(), release: make(chan struct{})}
			e.startPlugin(late, "10", "late", plugin.WithFailurePolicy(policy))
			defer close(late.release)
			refuser := newRecorder()
			refuser.fail["RunPodSandbox"] = errors.New("refused")
			e.startPlugin(refuser, "20", "refuser")

			pod := testPod(1)
			if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err == nil {
				t.Fatal("RunPodSandbox succeeded; the test needs it to fail")
			}
			if !e.joined("10-late") {
				t.Fatal("the late plugin was dropped; its policy says keep_connected")
			}
			late.release <- struct{}{} // it finishes setting the pod up
			if !eventually(2*time.Second, func() bool {
				got := late.seenOf(pod.GetId())
				return slices.Contains(got, "stop") && slices.Contains(got, "remove")
			}) {
				t.Errorf("the late plugin, kept connected, never got StopPodSandbox and RemovePodSandbox for the failed pod: it saw %v",
					late.seenOf(pod.GetId()))
			}
		})
	}
}

// holdValidator is a built-in PodValidator that, as the first step of
// RunPodSandbox, marks the pod as in flight in the runtime's pod list and
// waits until released.
type holdValidator struct {
	live    *livePods
	entered chan struct{}
	release chan struct{}
}

func (v *holdValidator) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return nil
}

func (v *holdValidator) ValidatePodSandbox(ctx context.Context, pod *api.PodSandbox, _ []*api.PluginInstance) error {
	v.live.set(pod, true) // RunPodSandbox has begun: the SyncFunc may list it
	close(v.entered)
	select {
	case <-v.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestReview_PodInFlightDuringValidationReachesJoinerOnce: the SyncFunc
// contract lets a runtime list a pod whose RunPodSandbox is in flight
// ("a plugin joining meanwhile gets their creation as an event instead");
// only a pod listed before its RunPodSandbox even began may reach a plugin
// twice. But RunPodSandbox runs the built-in pod validators before it
// registers the request (begin): a plugin that joins in that time gets the
// pod in Synchronize and then RunPodSandbox again, live.
func TestReview_PodInFlightDuringValidationReachesJoinerOnce(t *testing.T) {
	live := &livePods{pods: map[string]*api.PodSandbox{}}
	v := &holdValidator{live: live, entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, runtime.WithSyncFunc(live.list), runtime.WithValidator("00-hold", v),
		runtime.WithRequestTimeout(10*time.Second))
	pod := testPod(1)
	runErr := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
		runErr <- err
	}()
	<-v.entered // RunPodSandbox began and is validating

	// The joiner is configured while the pod is validated; it joins once
	// the requests that began before it have ended.
	joiner := newLedger()
	s, err := plugin.New(joiner, plugin.WithPluginName("joiner"), plugin.WithPluginIdx("20"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	close(v.release)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the joiner to join", func() bool { return e.joined("20-joiner") })
	if got := joiner.seenOf(pod.GetId()); len(got) != 1 {
		t.Errorf("the joiner learned of the pod %d times: %v; want once, in Synchronize or as RunPodSandbox", len(got), got)
	}
}

// impostor registers under a name already connected and waits in
// Configure, so that its join has not failed yet.
type impostor struct {
	rawPlugin
	configuring chan struct{}
	hold        chan struct{}
}

func (p *impostor) Configure(ctx context.Context, _ *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	close(p.configuring)
	select {
	case <-p.hold:
	case <-ctx.Done():
	}
	return &api.ConfigureResponse{Events: p.events}, nil
}

// TestReview_SecondConnectionCannotRewriteAConnectedPluginsNetwork: the
// runtime refuses a second connection the name of a connected plugin at
// join ("a second connection may not take over a connected plugin's
// name"), but UpdatePodSandboxNetwork only checks that the connection has
// registered: between its registration and its failed join, any process
// that may connect (e.g. one of WithAllowedPluginUIDs) can replace or
// withdraw the real network plugin's part of every pod, under its name.
func TestReview_SecondConnectionCannotRewriteAConnectedPluginsNetwork(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "net")
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()

	fake := &impostor{rawPlugin: rawPlugin{events: int32(api.MaskFor(api.Event_RUN_POD_SANDBOX))},
		configuring: make(chan struct{}), hold: make(chan struct{})}
	defer close(fake.hold)
	rt, _ := connectRaw(t, e.dial(), fake)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "net", PluginIdx: "10"}); err != nil {
		t.Fatal(err)
	}
	<-fake.configuring
	_, werr := rt.UpdatePodSandboxNetwork(ctx, &api.UpdatePodSandboxNetworkRequest{PodId: pod.GetId(), Withdraw: true})
	got, _ := store.PodNetwork(context.Background(), pod.GetId())
	if werr == nil || len(got.GetNetwork().GetIps()) == 0 {
		t.Errorf("a second connection registered as the connected 10-net withdrew its part: error %v, pod addresses now %v",
			werr, got.GetNetwork().GetIps())
	}
}

// TestReview_StopFromEvictFuncReturns: EvictFunc "may call the Runtime";
// Stop is part of it. Called from an EvictFunc that the Runtime runs on its
// own goroutine (evictions sent with UpdateContainers), Stop waits for that
// very goroutine and never returns, not even when its context ends.
func TestReview_StopFromEvictFuncReturns(t *testing.T) {
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

// TestReview_StopHonoursItsContextWithAFrozenPlugin: Stop sends Shutdown
// with a plain rpc, not through invoke, so the deadline guarantee does not
// hold for it: with a plugin that stopped reading and a full socket
// buffer, ttrpc's send waits for the connection's write timeout (the
// request timeout), whatever Stop's context says.
func TestReview_StopHonoursItsContextWithAFrozenPlugin(t *testing.T) {
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

// switchableNet is an in-process network plugin whose network can change.
type switchableNet struct {
	mu  sync.Mutex
	net *api.PodSandboxNetwork
}

func (h *switchableNet) get() *api.PodSandboxNetwork {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.net
}

func (h *switchableNet) set(n *api.PodSandboxNetwork) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.net = n
}

func (h *switchableNet) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return h.get(), nil
}

func (h *switchableNet) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*api.PodSandboxNetwork, error) {
	return h.get(), nil
}

// hookStore is a memStore that runs afterSet once a record is persisted,
// before SetPodNetwork returns (a reader seeing the new record at once).
type hookStore struct {
	*memStore
	hookMu   sync.Mutex
	afterSet func(podID string, rec *api.PodNetworkRecord)
}

func (s *hookStore) setHook(fn func(podID string, rec *api.PodNetworkRecord)) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.afterSet = fn
}

func (s *hookStore) SetPodNetwork(ctx context.Context, podID, plugin string, rec *api.PodNetworkRecord) error {
	if err := s.memStore.SetPodNetwork(ctx, podID, plugin, rec); err != nil {
		return err
	}
	s.hookMu.Lock()
	fn := s.afterSet
	s.hookMu.Unlock()
	if fn != nil {
		fn(podID, rec)
	}
	return nil
}

// TestReview_StatusCacheDoesNotAnswerWithAnOlderNetwork: the status cache
// ignores the record the caller passes as last. updatePodNetwork persists
// a plugin's update and only then drops the cached status, so a status
// call made in between, with the new record as last, is answered with the
// network from before the update; a runtime that persists the returned
// record when it differs from last (as the contract tells it to) then
// writes the update away.
func TestReview_StatusCacheDoesNotAnswerWithAnOlderNetwork(t *testing.T) {
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

// slowCatchUp is a joining plugin whose Synchronize and each RunPodSandbox
// wait until released.
type slowCatchUp struct {
	*holdingSync
	runEntered chan string
	runRelease chan struct{}
}

func (s *slowCatchUp) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	s.note(pod.GetId(), "run")
	s.runEntered <- pod.GetId()
	<-s.runRelease
	return nil
}

// TestReview_WaitForDrainingJoinerNamesIt: a request that waits in begin
// for a joining plugin whose catch-up cannot keep up, until its context
// ends, fails with the bare context error: it names neither the plugin it
// waited for nor the pod.
func TestReview_WaitForDrainingJoinerNamesIt(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(10*time.Second))
	j := &slowCatchUp{holdingSync: newHoldingSync(), runEntered: make(chan string, 4), runRelease: make(chan struct{})}
	e.startJoining(j, "20", "joiner")
	defer close(j.runRelease)
	<-j.entered
	ctx := context.Background()
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(1)}); err != nil {
		t.Fatal(err)
	}
	close(j.release)
	<-j.runEntered // the first catch-up round delivers pod 1
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(2)}); err != nil {
		t.Fatal(err)
	}
	j.runRelease <- struct{}{}
	<-j.runEntered // the second round delivers pod 2: the queue did not shrink, so the joiner drains

	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := e.rt.RunPodSandbox(wctx, &api.RunPodSandboxRequest{Pod: testPod(3)})
	if err == nil {
		t.Fatal("RunPodSandbox did not wait for the draining joiner")
	}
	if !strings.Contains(err.Error(), "20-joiner") || !strings.Contains(err.Error(), "pod3") {
		t.Errorf("error %q names neither the joining plugin it waited for nor the pod", err)
	}
}

// statusAbandonObserver blocks in StatusStale, for at most a second,
// and records whether Stop returned meanwhile.
type statusAbandonObserver struct {
	countingObserver
	entered     chan struct{}
	once        sync.Once
	stopped     chan struct{}
	afterReturn chan bool
}

func (o *statusAbandonObserver) StatusStale(plugin string) {
	o.once.Do(func() {
		close(o.entered)
		select {
		case <-o.stopped:
			o.afterReturn <- true
		case <-time.After(time.Second):
			o.afterReturn <- false
		}
	})
}

// TestReview_StopWaitsForAbandonedStatusRound: a status round runs on
// singleflight's goroutine, which track() does not count: once the caller
// that started it gives up, Stop can return while the round still runs and
// calls into the Observer and the logger.
func TestReview_StopWaitsForAbandonedStatusRound(t *testing.T) {
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

// TestReview_StartRacesStop: Start adds the accept loop to r.wg without
// track() (runtime.go, after the listener is stored), so a Stop running
// at that moment calls r.wg.Wait concurrently with that Add: a race the
// race detector reports (in about two runs out of three of 2,000 rounds
// here; this runs 6,000), and Stop may return before the accept loop
// ended.
func TestReview_StartRacesStop(t *testing.T) {
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

// bigAnnotator adds a large annotation to every container it sees created.
type bigAnnotator struct{ size int }

func (a bigAnnotator) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{Annotations: map[string]string{"bigAnnotator.example/big": strings.Repeat("a", a.size)}}, nil, nil
}

// passive creates containers without changing them.
type passive struct{}

func (passive) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// TestReview_ObjectsAcceptedAtTheDoorReachEveryPlugin: api.MaxObjectSize
// promises that "a pod and one of its containers always fit in one
// CreateContainerRequest". But later plugins are sent the container with
// the earlier plugins' adjustments applied (and validators also the
// adjustment and owners): with a pod and a container accepted at the door,
// a 100 KiB annotation from the first plugin makes the request to the
// second one larger than ttrpc carries, and the request fails with a
// PluginError that blames the second plugin, which never got it.
func TestReview_ObjectsAcceptedAtTheDoorReachEveryPlugin(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(bigAnnotator{size: 100 << 10}, "10", "annotator")
	e.startPlugin(passive{}, "20", "passive")
	const target = api.MaxObjectSize - 4<<10
	pod := netPod(1)
	for i := 0; pod.SizeVT() < target; i++ {
		pod.Labels[fmt.Sprintf("label-%05d", i)] = strings.Repeat("v", 1024)
	}
	ctr := testContainer(pod, 1)
	ctr.Env = nil
	for i := 0; ctr.SizeVT() < target; i++ {
		ctr.Env = append(ctr.Env, "V"+strings.Repeat("x", 1024))
	}
	for _, err := range []error{api.CheckPodSize(pod), api.CheckContainerSize(ctr)} {
		if err != nil {
			t.Fatalf("test objects too large for the door: %v", err)
		}
	}
	_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr})
	var perr *runtime.PluginError
	if errors.As(err, &perr) && perr.Plugin == "20-passive" {
		t.Errorf("CreateContainer of a pod (%d bytes) and container (%d bytes) accepted at the door failed, blaming a plugin that never got the request: %v",
			pod.SizeVT(), ctr.SizeVT(), err)
	} else if err != nil {
		t.Logf("CreateContainer: %v", err)
	}
}

// instantValidator accepts everything at once.
type instantValidator struct{}

func (instantValidator) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return nil
}

func (instantValidator) ValidatePodSandbox(context.Context, *api.PodSandbox, []*api.PluginInstance) error {
	return nil
}

// TestReview_BuiltinValidatorAnsweringAtOnceIsNotLate: bounded runs a
// built-in validator on a goroutine that sends its result and then
// cancels the deadline's context; when the waiter reaches its select only
// after both, select picks either case at random, and a validator that
// answered at once is reported as "no answer within 2s": the pod or
// container is rejected. (invoke guards against this with its state
// hand-over; bounded does not.) About 1 call in 20,000-50,000 here; it
// also makes TestRuntime_DefaultValidator fail now and then.
func TestReview_BuiltinValidatorAnsweringAtOnceIsNotLate(t *testing.T) {
	rt, err := runtime.New("test", "v1", runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""),
		runtime.WithValidator("00-instant", instantValidator{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	var (
		failed atomic.Int64
		first  atomic.Value
		wg     sync.WaitGroup
	)
	for w := range 16 {
		wg.Go(func() {
			for n := 0; n < 12_500 && failed.Load() == 0; n++ {
				pod := testPod(100_000*(w+1) + n)
				pod.Linux = nil // host network: no plugin, only the validator
				if _, err := rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("a built-in validator that accepts at once rejected %d pods: %v", n, first.Load())
	}
}
