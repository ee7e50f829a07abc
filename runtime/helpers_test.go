package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

type logBuffer = testutil.LogBuffer

// waitFor polls cond until it holds or the test's patience (10 s) runs out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, 10*time.Second, cond)
}

// env is a started runtime on a socket in a temp dir, with captured logs.
type env struct {
	t    testing.TB
	rt   *runtime.Runtime
	sock string
	logs *logBuffer
}

func newEnv(t testing.TB, opts ...runtime.Option) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "nrinet-rt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return newEnvAt(t, filepath.Join(dir, "nri", "nri.sock"), opts...)
}

// newEnvAt is newEnv with the socket at sock.
func newEnvAt(t testing.TB, sock string, opts ...runtime.Option) *env {
	t.Helper()
	e := &env{t: t, sock: sock, logs: &logBuffer{}}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	base := []runtime.Option{
		runtime.WithSocketPath(e.sock),
		runtime.WithPluginPath(""),
		runtime.WithLogger(logger),
	}
	rt, err := runtime.New("test-runtime", "v9.9.9", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt.Stop(ctx)
	})
	e.rt = rt
	return e
}

// joined reports whether a plugin of that full name is in the dispatch list.
func (e *env) joined(name string) bool {
	for _, p := range e.rt.Plugins() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// startPlugin starts an in-process plugin built on the plugin library and
// waits until it has joined.
func (e *env) startPlugin(h any, idx, name string, opts ...plugin.Option) *plugin.Stub {
	e.t.Helper()
	s := e.startJoining(h, idx, name, opts...)
	waitFor(e.t, "plugin "+s.Name()+" to join", func() bool { return e.joined(s.Name()) })
	return s
}

// dial connects to the runtime's socket as a raw client.
func (e *env) dial() net.Conn {
	e.t.Helper()
	c, err := net.Dial("unix", e.sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// recorder is a plugin handler that records the events it sees.
type recorder struct {
	mu     sync.Mutex
	events []string
	pods   map[string]*api.PodSandbox
	sync   struct {
		pods, ctrs int
	}
	fail map[string]error // event method → error to return
}

func newRecorder() *recorder {
	return &recorder{pods: map[string]*api.PodSandbox{}, fail: map[string]error{}}
}

func (r *recorder) record(ev string, pod *api.PodSandbox, ctr *api.Container) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ev + " " + pod.GetName()
	if ctr != nil {
		s += "/" + ctr.GetName()
	}
	r.events = append(r.events, s)
	r.pods[pod.GetId()] = pod
	return r.fail[ev]
}

func (r *recorder) pod(id string) *api.PodSandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[id]
}

func (r *recorder) synced() (pods, ctrs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sync.pods, r.sync.ctrs
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sync.pods, r.sync.ctrs = len(pods), len(ctrs)
	return nil, nil
}

func (r *recorder) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return r.record("RunPodSandbox", pod, nil)
}

func (r *recorder) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return r.record("StopPodSandbox", pod, nil)
}

func (r *recorder) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return r.record("RemovePodSandbox", pod, nil)
}

func (r *recorder) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return r.record("StartContainer", pod, ctr)
}

func testPod(n int) *api.PodSandbox {
	return &api.PodSandbox{
		Id:        fmt.Sprintf("pod-id-%d", n),
		Name:      fmt.Sprintf("pod%d", n),
		Uid:       fmt.Sprintf("uid-%d", n),
		Namespace: "default",
		Labels:    map[string]string{"app": "web", "n": fmt.Sprint(n)},
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{
			{Type: "network", Path: fmt.Sprintf("/var/run/netns/test-%d", n)},
		}},
	}
}

func testContainer(pod *api.PodSandbox, n int) *api.Container {
	return &api.Container{
		Id:           fmt.Sprintf("ctr-id-%d", n),
		PodSandboxId: pod.GetId(),
		Name:         fmt.Sprintf("ctr%d", n),
		State:        api.ContainerState_CONTAINER_RUNNING,
		Env:          []string{"PATH=/bin"},
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func withShortTimeouts() []runtime.Option {
	return []runtime.Option{runtime.WithRegistrationTimeout(2 * time.Second), runtime.WithRequestTimeout(time.Second)}
}

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
	return testutil.Poll(d, 5*time.Millisecond, testutil.Until("the condition", cond)) == nil
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

// instantValidator accepts everything at once.
type instantValidator struct{}

func (instantValidator) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return nil
}

func (instantValidator) ValidatePodSandbox(context.Context, *api.PodSandbox, []*api.PluginInstance) error {
	return nil
}

// bigPod returns a pod whose labels take about size bytes, in labels of
// labelSize bytes each.
func bigPod(n, size, labelSize int) *api.PodSandbox {
	pod := netPod(n)
	pod.Labels = map[string]string{}
	v := strings.Repeat("v", labelSize)
	for i := 0; i*(labelSize+16) < size; i++ {
		pod.Labels[fmt.Sprintf("label-%07d", i)] = v
	}
	return pod
}

// gate is a plugin whose RunPodSandbox blocks until released.
type gate struct {
	entered chan string
	release chan struct{}
}

func (g *gate) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	g.entered <- pod.GetId()
	<-g.release
	return nil
}

func (g *gate) StopPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// configured tells when a plugin has been configured.
type configured struct {
	*recorder
	done chan struct{}
}

func (c *configured) Configure(context.Context, string, string, string) (api.EventMask, error) {
	close(c.done)
	return 0, nil
}

// netHandler is an in-process network plugin returning a fixed network.
type netHandler struct{ net *api.PodSandboxNetwork }

func (h netHandler) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return h.net, nil
}

func (h netHandler) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*api.PodSandboxNetwork, error) {
	return h.net, nil
}

// heapAfterGC returns the live heap.
func heapAfterGC() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// uidProbeEnv makes the test binary, run as another user, register a
// plugin on the socket it names and exit 0 if the runtime configured it.
const uidProbeEnv = "NRINET_TEST_UID_PROBE"

func uidProbeMain(sock string) {
	s, err := plugin.New(newRecorder(), plugin.WithPluginName("probe"), plugin.WithPluginIdx("50"),
		plugin.WithSocketPath(sock), plugin.WithEnv(func(string) string { return "" }, "probe"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.Start(ctx)
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.Stop()
}

// fakeClock is a clock a test moves on (runtime.WithClock).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

// now returns the clock's time.
func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// advance moves the clock on by d.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
