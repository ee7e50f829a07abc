package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

func TestRuntime_RelaysEventsInOrder(t *testing.T) {
	pods := []*api.PodSandbox{testPod(1), testPod(2), testPod(3)}
	var ctrs []*api.Container
	for i := range 5 {
		ctrs = append(ctrs, testContainer(pods[i%3], i))
	}
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return pods, ctrs, nil
	}))
	var order []string
	recs := map[string]*recorder{}
	for _, id := range []struct{ idx, name string }{{"10", "b"}, {"10", "a"}, {"05", "c"}} {
		rec := newRecorder()
		recs[id.idx+"-"+id.name] = rec
		e.startPlugin(rec, id.idx, id.name)
	}
	for _, p := range e.rt.Plugins() {
		order = append(order, p.Name)
	}
	if want := []string{"05-c", "10-a", "10-b"}; !slices.Equal(order, want) {
		t.Fatalf("invocation order %v, want %v", order, want)
	}
	for name, rec := range recs {
		if np, nc := rec.synced(); np != 3 || nc != 5 {
			t.Errorf("%s synchronized %d pods, %d containers; want 3, 5", name, np, nc)
		}
	}

	ctx := context.Background()
	pod := testPod(7)
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: testContainer(pod, 9)}); err != nil {
		t.Fatal(err)
	}
	for name, rec := range recs {
		want := []string{"RunPodSandbox pod7", "StartContainer pod7/ctr9"}
		if got := rec.seen(); !slices.Equal(got, want) {
			t.Errorf("%s saw %v, want %v", name, got, want)
		}
		got := rec.pod(pod.Id)
		if got.GetUid() != "uid-7" || got.GetLabels()["n"] != "7" || got.NetNSPath() != "/var/run/netns/test-7" {
			t.Errorf("%s got pod %v, payload not intact", name, got)
		}
	}
}

func TestRuntime_PluginErrorNamesPlugin(t *testing.T) {
	e := newEnv(t)
	first, second := newRecorder(), newRecorder()
	first.fail["RunPodSandbox"] = errors.New("no address left in 198.18.0.0/24")
	e.startPlugin(first, "10", "ipam")
	e.startPlugin(second, "20", "later")

	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
	var perr *runtime.PluginError
	if !errors.As(err, &perr) || perr.Plugin != "10-ipam" || perr.Method != "RunPodSandbox" {
		t.Fatalf("error = %v, want a PluginError from 10-ipam", err)
	}
	if want := `plugin "10-ipam": RunPodSandbox: no address left in 198.18.0.0/24`; err.Error() != want {
		t.Errorf("error text = %q, want %q", err.Error(), want)
	}
	if len(second.seen()) != 0 {
		t.Errorf("plugin after the failing one was called: %v", second.seen())
	}
}

// hanger blocks in RunPodSandbox until released.
type hanger struct{ release chan struct{} }

func (h *hanger) RunPodSandbox(context.Context, *api.PodSandbox) error {
	<-h.release // ignores its deadline, as a stuck plugin would
	return nil
}

func TestRuntime_HangingPluginIsDropped(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(200*time.Millisecond))
	h := &hanger{release: make(chan struct{})}
	defer close(h.release)
	closed := make(chan error, 1)
	e.startPlugin(h, "10", "hangs", plugin.WithOnClose(func(err error) { closed <- err }))
	rec := newRecorder()
	e.startPlugin(rec, "20", "works")

	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)}); err != nil {
		t.Fatalf("request failed although only a plugin timed out: %v", err)
	}
	if got := rec.seen(); len(got) != 1 {
		t.Fatalf("working plugin saw %v", got)
	}
	waitFor(t, "hanging plugin to be dropped", func() bool { return !e.joined("10-hangs") })
	if !contains(e.logs.String(), `plugin=10-hangs`) || !contains(e.logs.String(), "RunPodSandbox") {
		t.Errorf("no log line naming the dropped plugin:\n%s", e.logs)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("dropped plugin's connection was not closed")
	}
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(2)}); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 2 {
		t.Fatalf("working plugin saw %v after the drop", got)
	}
}

func TestRuntime_FailurePolicyFailsRequest(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(200*time.Millisecond))
	h := &hanger{release: make(chan struct{})}
	defer close(h.release)
	e.startPlugin(h, "10", "strict", plugin.WithFailurePolicy(&api.FailurePolicy{FailRequest: true, KeepConnected: true}))
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
	var perr *runtime.PluginError
	if !errors.As(err, &perr) || perr.Plugin != "10-strict" {
		t.Fatalf("error = %v, want the timeout of 10-strict", err)
	}
	if !e.joined("10-strict") {
		t.Fatal("plugin with keep_connected was dropped")
	}
}

func TestRuntime_SilentPluginDoesNotDelayOthers(t *testing.T) {
	e := newEnv(t, runtime.WithRegistrationTimeout(3*time.Second))
	silent := e.dial() // connects, never registers
	start := time.Now()
	e.startPlugin(newRecorder(), "10", "prompt")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second plugin took %v to join behind a silent one", d)
	}
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("silent connection was not closed after the registration timeout")
	}
	if !contains(e.logs.String(), "did not register within 3s") || !contains(e.logs.String(), "unregistered external plugin (pid") {
		t.Errorf("no log line about the silent plugin:\n%s", e.logs)
	}
}

func TestRuntime_LargeSynchronizeIsChunked(t *testing.T) {
	var pods []*api.PodSandbox
	var ctrs []*api.Container
	for i := range 6000 {
		pod := testPod(i)
		pod.Annotations = map[string]string{"io.kubernetes.pod/padding": fmt.Sprintf("%0700d", i)}
		pods = append(pods, pod)
		ctrs = append(ctrs, testContainer(pod, i))
	}
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return pods, ctrs, nil
	}))
	rec := newRecorder()
	e.startPlugin(rec, "10", "big")
	if np, nc := rec.synced(); np != 6000 || nc != 6000 {
		t.Fatalf("synchronized %d pods, %d containers; want 6000 each", np, nc)
	}
	m := regexp.MustCompile(`chunks=(\d+)`).FindStringSubmatch(e.logs.String())
	if m == nil || m[1] == "1" {
		t.Errorf("expected the state to be sent in several chunks:\n%s", e.logs)
	}
}

// adjuster adds an env var and an annotation to every container.
type adjuster struct{ key, value string }

func (a adjuster) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{
		Annotations: map[string]string{a.key: a.value},
		Env:         []*api.KeyValue{{Key: "SEEN_" + fmt.Sprint(len(ctr.GetEnv())), Value: a.value}},
	}, nil, nil
}

func TestRuntime_CreateContainerMerges(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(adjuster{"a.example.com/x", "1"}, "10", "one")
	e.startPlugin(adjuster{"b.example.com/x", "2"}, "20", "two")
	pod := testPod(1)
	rsp, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err != nil {
		t.Fatal(err)
	}
	adj := rsp.GetAdjust()
	if adj.GetAnnotations()["a.example.com/x"] != "1" || adj.GetAnnotations()["b.example.com/x"] != "2" {
		t.Errorf("annotations = %v", adj.GetAnnotations())
	}
	// The second plugin saw the first one's env var: 2 vars, not 1.
	var keys []string
	for _, kv := range adj.GetEnv() {
		keys = append(keys, kv.GetKey())
	}
	if !slices.Equal(keys, []string{"SEEN_1", "SEEN_2"}) {
		t.Errorf("env keys = %v, want [SEEN_1 SEEN_2]", keys)
	}
}

func TestRuntime_CreateContainerConflict(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(adjuster{"team", "red"}, "10", "one")
	e.startPlugin(adjuster{"team", "blue"}, "20", "two")
	pod := testPod(1)
	_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	var cerr *runtime.ConflictError
	if !errors.As(err, &cerr) || cerr.Plugin != "20-two" || cerr.Owner != "10-one" {
		t.Fatalf("error = %v, want a conflict between 20-two and 10-one", err)
	}
	if !contains(err.Error(), `Annotations "team"`) {
		t.Errorf("conflict error does not name the field: %v", err)
	}
}

// validator rejects containers that got an annotation "team".
type teamValidator struct{}

func (teamValidator) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if _, ok := req.GetAdjust().GetAnnotations()["team"]; ok {
		owner := req.GetOwners().GetOwners()[req.GetContainer().GetId()].GetCompound()[int32(api.Field_Annotations)].GetOwners()["team"]
		return fmt.Errorf("annotation team set by %s is not allowed", owner)
	}
	return nil
}

func TestRuntime_ValidatorRejects(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(adjuster{"team", "red"}, "10", "one")
	e.startPlugin(teamValidator{}, "90", "policy")
	pod := testPod(1)
	_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err == nil || !contains(err.Error(), `validator "90-policy" rejected`) || !contains(err.Error(), "set by 10-one") {
		t.Fatalf("error = %v, want a rejection by 90-policy naming 10-one", err)
	}
}

func TestRuntime_UpdateContainersReachesCallback(t *testing.T) {
	got := make(chan string, 1)
	e := newEnv(t, runtime.WithUpdateFunc(func(_ context.Context, plugin string, ups []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
		got <- fmt.Sprintf("%s %s", plugin, ups[0].GetContainerId())
		return nil, nil
	}))
	s := e.startPlugin(newRecorder(), "10", "tuner")
	failed, err := s.UpdateContainers(context.Background(), []*api.ContainerUpdate{{ContainerId: "ctr-1"}}, nil)
	if err != nil || len(failed) != 0 {
		t.Fatalf("UpdateContainers = %v, %v", failed, err)
	}
	if g := <-got; g != "10-tuner ctr-1" {
		t.Fatalf("callback got %q", g)
	}
}

func TestRuntime_StopSendsShutdown(t *testing.T) {
	e := newEnv(t)
	closed := make(chan error, 1)
	sd := &shutdowner{recorder: newRecorder(), called: make(chan struct{})}
	e.startPlugin(sd, "10", "polite", plugin.WithOnClose(func(err error) { closed <- err }))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sd.called:
	default:
		t.Fatal("plugin did not get Shutdown")
	}
	<-closed
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(1)}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("request after Stop = %v, want ErrClosed", err)
	}
}

type shutdowner struct {
	*recorder
	called chan struct{}
}

func (s *shutdowner) Shutdown(context.Context) { close(s.called) }

func TestRuntime_DeadPluginIsDropped(t *testing.T) {
	e := newEnv(t)
	dying := e.startPlugin(newRecorder(), "10", "dies")
	rec := newRecorder()
	e.startPlugin(rec, "20", "lives")
	dying.Stop() // the connection goes away, as when the process dies
	waitFor(t, "dead plugin to be dropped", func() bool { return !e.joined("10-dies") })
	if !contains(e.logs.String(), `msg="plugin disconnected" plugin=10-dies`) {
		t.Errorf("no log line naming the dead plugin:\n%s", e.logs)
	}
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)}); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 1 {
		t.Fatalf("surviving plugin saw %v", got)
	}
}

// countingObserver records what a Runtime reports.
type countingObserver struct {
	mu        sync.Mutex
	calls     []string
	conflicts []string
	stale     []string
	restarts  []string
}

func (o *countingObserver) PluginRestarted(plugin string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restarts = append(o.restarts, plugin)
}

func (o *countingObserver) PluginCall(plugin, method string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s %s %v", plugin, method, err != nil))
}

func (o *countingObserver) NetworkConflict(plugin, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.conflicts = append(o.conflicts, plugin+" vs "+owner)
}

func (o *countingObserver) StatusStale(plugin string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stale = append(o.stale, plugin)
}

func TestRuntime_Observer(t *testing.T) {
	obs := &countingObserver{}
	e := newEnv(t, runtime.WithObserver(obs))
	rec := newRecorder()
	rec.fail["RunPodSandbox"] = errors.New("boom")
	e.startPlugin(rec, "10", "seen")
	e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Contains(obs.calls, "10-seen RunPodSandbox true") {
		t.Fatalf("observer saw %v", obs.calls)
	}
}

// TestRuntime_PluginGoneBeforeItsTurnIsSkipped: a plugin whose connection
// closes while an earlier plugin handles the request is not asked, and,
// whatever its failure policy, does not fail the request: it takes no
// part, as if it had left before the request began (upstream's rule).
func TestRuntime_PluginGoneBeforeItsTurnIsSkipped(t *testing.T) {
	e := newEnv(t)
	first := &blockingRun{ledger: newLedger(), entered: make(chan string, 1), release: make(chan struct{})}
	e.startPlugin(first, "00", "first")
	later := newRecorder()
	s := e.startPlugin(later, "10", "strict", plugin.WithFailurePolicy(&api.FailurePolicy{FailRequest: true, KeepConnected: true}))

	errc := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
		errc <- err
	}()
	<-first.entered
	s.Stop()
	waitFor(t, "the stopped plugin to be closed", func() bool { return !e.joined("10-strict") })
	close(first.release)
	if err := <-errc; err != nil {
		t.Fatalf("request failed for a plugin that had left before its turn: %v", err)
	}
	if got := later.seen(); len(got) != 0 {
		t.Fatalf("the plugin that had left was asked: %v", got)
	}
}

// TestRuntime_CallerDeadlineIsNotThePluginsFailure: when the caller's own
// deadline passes while a plugin handles the request, the request fails
// with the caller's error, which does not blame the plugin (no
// *PluginError); the plugin stays, and the log says where the request
// was.
func TestRuntime_CallerDeadlineIsNotThePluginsFailure(t *testing.T) {
	e := newEnv(t)
	h := &hanger{release: make(chan struct{})}
	e.startPlugin(h, "10", "slow", plugin.WithFailurePolicy(&api.FailurePolicy{FailRequest: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(1)})
	close(h.release)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the caller's context.DeadlineExceeded", err)
	}
	var perr *runtime.PluginError
	if errors.As(err, &perr) {
		t.Fatalf("the caller's deadline is reported as the failure of plugin %q: %v", perr.Plugin, err)
	}
	if !e.joined("10-slow") {
		t.Fatal("the plugin was dropped for the caller's deadline")
	}
	if !contains(e.logs.String(), "the caller gave up") || !contains(e.logs.String(), "plugin=10-slow") {
		t.Errorf("no log line naming the plugin the request was at:\n%s", e.logs)
	}
}
