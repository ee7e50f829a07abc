package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// TestJoin_CatchUpOnAPodThatFailsIsCleanedUp: a plugin that joins while a
// RunPodSandbox is in flight gets the pod's creation in its catch-up; when
// that RunPodSandbox then fails, the joiner is told to stop and remove the
// pod too, so that a network plugin does not keep an address for a pod
// that never came to exist.
func TestJoin_CatchUpOnAPodThatFailsIsCleanedUp(t *testing.T) {
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

// TestJoin_PodInFlightDuringValidationReachesJoinerOnce: a plugin that
// joins while a RunPodSandbox is still in the built-in pod validators
// learns of the pod once: in Synchronize or as the live RunPodSandbox,
// never both.
func TestJoin_PodInFlightDuringValidationReachesJoinerOnce(t *testing.T) {
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

// TestJoin_WaitForADrainingJoinerNamesIt: a request that waits for a
// joining plugin whose catch-up cannot keep up, until its context ends,
// fails with an error that names the plugin it waited for and the pod.
func TestJoin_WaitForADrainingJoinerNamesIt(t *testing.T) {
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

// TestJoin_ObjectsAcceptedAtTheDoorReachEveryPlugin: a pod and a
// container accepted at the door (api.MaxObjectSize) reach every plugin,
// also after an earlier plugin's adjustment (a 100 KiB annotation) made
// the request to the later ones larger; no plugin is blamed for a request
// it never got.
func TestJoin_ObjectsAcceptedAtTheDoorReachEveryPlugin(t *testing.T) {
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

// TestJoin_BuiltinValidatorAnsweringAtOnceIsNotLate: a built-in
// validator that answers at once is never reported late ("no answer
// within ..."), whichever of its answer and its deadline's cancellation
// the waiter sees first; run many times, as the race it guards against
// was rare.
func TestJoin_BuiltinValidatorAnsweringAtOnceIsNotLate(t *testing.T) {
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

// TestJoin_BigPodsDoNotStopPluginsJoining: a pod larger than the
// Synchronize chunk size, and one with 100,000 small labels, both
// accepted by RunPodSandbox, must not keep a plugin from joining later.
func TestJoin_BigPodsDoNotStopPluginsJoining(t *testing.T) {
	big := bigPod(1, 1536<<10, 1024) // 1.5 MiB of labels
	many := bigPod(2, 0, 1)
	for i := range 100_000 {
		many.Labels[fmt.Sprintf("l%06d", i)] = "x"
	}
	for _, pod := range []*api.PodSandbox{big, many} {
		if err := api.CheckPodSize(pod); err != nil {
			t.Fatalf("test pod too large for the runtime: %v", err)
		}
	}
	pods := []*api.PodSandbox{netPod(3), big, netPod(4), many}
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return pods, nil, nil
	}))
	for _, pod := range pods {
		if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatalf("RunPodSandbox of %s: %v", pod.GetId(), err)
		}
	}
	rec := newRecorder()
	e.startPlugin(rec, "10", "late")
	if n, _ := rec.synced(); n != len(pods) {
		t.Errorf("plugin synchronized %d pods, want %d", n, len(pods))
	}
}

// TestJoin_JoiningPluginDoesNotStallRequests: while one plugin is
// slow on a request and another one joins, a request for an unrelated pod
// must not wait for the slow one.
func TestJoin_JoiningPluginDoesNotStallRequests(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(30*time.Second))
	g := &gate{entered: make(chan string, 1), release: make(chan struct{})}
	e.startPlugin(g, "10", "slow")
	released := false
	defer func() {
		if !released {
			close(g.release)
		}
	}()
	runDone := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
		runDone <- err
	}()
	<-g.entered // pod 1 is now held by the slow plugin

	joiner := &configured{recorder: newRecorder(), done: make(chan struct{})}
	s, err := plugin.New(joiner, plugin.WithPluginName("joiner"), plugin.WithPluginIdx("20"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	startErr := make(chan error, 1)
	go func() { startErr <- s.Start(context.Background()) }()
	t.Cleanup(s.Stop)
	<-joiner.done // configured: the runtime now registers it as joining
	// It stays joining until pod 1's request ends: that request started
	// before it, so its Synchronize waits for it.
	waitFor(t, "the plugin to be joining", func() bool { return runtime.Joining(e.rt) == 1 })

	// Requests for other pods go on meanwhile.
	for n := 2; n < 22; n++ {
		done := make(chan error, 1)
		go func() {
			done <- e.rt.StopPodSandbox(context.Background(), &api.StopPodSandboxRequest{Pod: testPod(n)})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("StopPodSandbox of pod %d waited behind the slow plugin and the joining one", n)
		}
	}
	close(g.release)
	released = true
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if err := <-startErr; err != nil {
		t.Fatal(err)
	}
}
