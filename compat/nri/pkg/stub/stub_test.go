package stub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
)

// patience bounds every wait of these tests; none of them measures time.
const patience = 10 * time.Second

// logBuffer collects a runtime's log for a failing test.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testRuntime is nrinet's runtime library accepting plugins on a socket
// of its own.
type testRuntime struct {
	*runtime.Runtime
	sock string
	stop func()
}

// startRuntime starts a runtime named "stub-test" v1.0.0 on a socket in a
// new temp dir; it is stopped when the test ends, or earlier by stop.
func startRuntime(t *testing.T, opts ...runtime.Option) *testRuntime {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-stub-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nri.sock")
	logs := &logBuffer{}
	base := []runtime.Option{
		runtime.WithSocketPath(sock), runtime.WithPluginPath(""),
		runtime.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	rt, err := runtime.New("stub-test", "v1.0.0", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			rt.Stop(ctx)
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("runtime log:\n%s", logs)
		}
	})
	return &testRuntime{Runtime: rt, sock: sock, stop: stop}
}

// newStub returns a stub named 10-test for p that dials rt and logs to a
// buffer shown if the test fails.
func newStub(t *testing.T, p any, rt *testRuntime, opts ...stub.Option) stub.Stub {
	t.Helper()
	l := &logRecorder{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stub log:\n%s", l)
		}
	})
	base := []stub.Option{stub.WithPluginName("test"), stub.WithPluginIdx("10"), stub.WithSocketPath(rt.sock), stub.WithLogger(l)}
	s, err := stub.New(p, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start starts s and waits until rt has the plugin joined; the test's end
// stops it.
func start(t *testing.T, s stub.Stub, rt *testRuntime) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		s.Wait()
	})
	waitFor(t, "the plugin to join", func() bool { return pluginInfo(rt, "10-test") != nil })
}

// pluginInfo returns what rt says of the joined plugin name, nil if it
// has not joined.
func pluginInfo(rt *testRuntime, name string) *runtime.PluginInfo {
	for _, p := range rt.Plugins() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// waitFor polls cond until it holds, failing the test after patience.
// (Not testutil.Poll, which this module cannot import: see waitFor in
// pkg/adaptation's network_test.go.)
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receive waits for a value on ch, failing the test after patience.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// recorder implements every interface of package stub, with upstream's
// signatures, and records the calls it gets as "Method pod[/container]".
type recorder struct {
	mask      api.EventMask // what Configure returns
	configErr error
	reject    string // ValidateContainerAdjustment rejects containers of this name

	mu    sync.Mutex
	calls []string
	stub  stub.Stub
	// seen in Configure
	runtime, version, config string
	nriVersion               string
	timeouts                 [2]time.Duration
}

// An upstream-style plugin implements the interfaces of package stub with
// upstream's method signatures.
var (
	_ = stub.ConfigureInterface(&recorder{})
	_ = stub.SynchronizeInterface(&recorder{})
	_ = stub.ShutdownInterface(&recorder{})
	_ = stub.RunPodInterface(&recorder{})
	_ = stub.UpdatePodInterface(&recorder{})
	_ = stub.StopPodInterface(&recorder{})
	_ = stub.RemovePodInterface(&recorder{})
	_ = stub.PostUpdatePodInterface(&recorder{})
	_ = stub.CreateContainerInterface(&recorder{})
	_ = stub.StartContainerInterface(&recorder{})
	_ = stub.UpdateContainerInterface(&recorder{})
	_ = stub.StopContainerInterface(&recorder{})
	_ = stub.RemoveContainerInterface(&recorder{})
	_ = stub.PostCreateContainerInterface(&recorder{})
	_ = stub.PostStartContainerInterface(&recorder{})
	_ = stub.PostUpdateContainerInterface(&recorder{})
	_ = stub.ValidateContainerAdjustmentInterface(&recorder{})
)

// upstreamStub has the methods of upstream's Stub interface: Stub has
// exactly these (the surface test in internal/apisurface checks all of
// upstream's pkg/stub when the module cache has it).
type upstreamStub interface {
	Run(context.Context) error
	Start(context.Context) error
	Stop()
	Wait()
	UpdateContainers([]*api.ContainerUpdate) ([]*api.ContainerUpdate, error)
	RegistrationTimeout() time.Duration
	RequestTimeout() time.Duration
	Logger() nrilog.Logger
	RuntimeNRIVersion() string
	PluginNRIVersion() string
}

var (
	_ upstreamStub = stub.Stub(nil)
	_ stub.Stub    = upstreamStub(nil)
)

func (r *recorder) record(method string, pod *api.PodSandbox, ctr *api.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	call := method + " " + pod.GetId()
	if ctr != nil {
		call += "/" + ctr.GetId()
	}
	r.calls = append(r.calls, call)
}

func (r *recorder) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) Configure(_ context.Context, config, runtime, version string) (stub.EventMask, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.config, r.runtime, r.version = config, runtime, version
	if r.stub != nil {
		r.nriVersion = r.stub.RuntimeNRIVersion()
		r.timeouts = [2]time.Duration{r.stub.RegistrationTimeout(), r.stub.RequestTimeout()}
	}
	return r.mask, r.configErr
}

func (r *recorder) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r.record("Synchronize", &api.PodSandbox{Id: fmt.Sprint(len(pods))}, &api.Container{Id: fmt.Sprint(len(ctrs))})
	return nil, nil
}

func (r *recorder) Shutdown(context.Context) { r.record("Shutdown", nil, nil) }

func (r *recorder) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.record("RunPodSandbox", pod, nil)
	return nil
}

func (r *recorder) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	r.record("UpdatePodSandbox", pod, nil)
	return nil
}

func (r *recorder) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.record("PostUpdatePodSandbox", pod, nil)
	return nil
}

func (r *recorder) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.record("StopPodSandbox", pod, nil)
	return nil
}

func (r *recorder) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.record("RemovePodSandbox", pod, nil)
	return nil
}

func (r *recorder) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	r.record("CreateContainer", pod, ctr)
	adjust := &api.ContainerAdjustment{}
	adjust.AddEnv("RECORDED_BY", "10-test")
	return adjust, nil, nil
}

func (r *recorder) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.record("PostCreateContainer", pod, ctr)
	return nil
}

func (r *recorder) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.record("StartContainer", pod, ctr)
	return nil
}

func (r *recorder) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.record("PostStartContainer", pod, ctr)
	return nil
}

func (r *recorder) UpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	r.record("UpdateContainer", pod, ctr)
	return nil, nil
}

func (r *recorder) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.record("PostUpdateContainer", pod, ctr)
	return nil
}

func (r *recorder) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	r.record("StopContainer", pod, ctr)
	return nil, nil
}

func (r *recorder) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.record("RemoveContainer", pod, ctr)
	return nil
}

func (r *recorder) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	r.record("ValidateContainerAdjustment", req.GetPod(), req.GetContainer())
	if req.GetContainer().GetName() == r.reject && r.reject != "" {
		return fmt.Errorf("container name %q is not welcome", r.reject)
	}
	return nil
}

var (
	pod0 = &api.PodSandbox{Id: "pod0", Name: "pod0", Uid: "uid0", Namespace: "default"}
	ctr0 = &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0", State: api.ContainerState_CONTAINER_CREATED}
)

// lifecycle drives rt through every request of a pod and a container,
// collecting the errors.
func lifecycle(ctx context.Context, rt *testRuntime) error {
	res := &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	_, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod0})
	add(err)
	_, err = rt.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod0, LinuxResources: res})
	add(err)
	add(rt.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod0}))
	_, err = rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod0, Container: ctr0})
	add(err)
	add(rt.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod0, Container: ctr0}))
	add(rt.StartContainer(ctx, &api.StartContainerRequest{Pod: pod0, Container: ctr0}))
	add(rt.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod0, Container: ctr0}))
	_, err = rt.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod0, Container: ctr0, LinuxResources: res})
	add(err)
	add(rt.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod0, Container: ctr0}))
	_, err = rt.StopContainer(ctx, &api.StopContainerRequest{Pod: pod0, Container: ctr0})
	add(err)
	add(rt.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod0, Container: ctr0}))
	add(rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod0}))
	add(rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod0}))
	return errors.Join(errs...)
}

// TestStub_Subscription: the runtime sees the subscription upstream's
// stub would make, and the plugin gets exactly those events.
func TestStub_Subscription(t *testing.T) {
	all := []string{
		"RunPodSandbox pod0", "UpdatePodSandbox pod0", "PostUpdatePodSandbox pod0",
		"CreateContainer pod0/ctr0", "ValidateContainerAdjustment pod0/ctr0", "PostCreateContainer pod0/ctr0",
		"StartContainer pod0/ctr0", "PostStartContainer pod0/ctr0", "UpdateContainer pod0/ctr0",
		"PostUpdateContainer pod0/ctr0", "StopContainer pod0/ctr0", "RemoveContainer pod0/ctr0",
		"StopPodSandbox pod0", "RemovePodSandbox pod0",
	}
	for _, tc := range []struct {
		name  string
		mask  string // Configure's answer
		want  []string
		pairs bool // ValidateContainerAdjustment only comes with CreateContainer
	}{
		{name: "zero mask: every event handled", want: all},
		{name: "pod events", mask: "pod", want: []string{
			"RunPodSandbox pod0", "UpdatePodSandbox pod0", "PostUpdatePodSandbox pod0", "StopPodSandbox pod0", "RemovePodSandbox pod0"}},
		{name: "two container events", mask: "StartContainer,RemoveContainer", want: []string{"StartContainer pod0/ctr0", "RemoveContainer pod0/ctr0"}},
		{name: "validation only", mask: "ValidateContainerAdjustment", want: []string{"ValidateContainerAdjustment pod0/ctr0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startRuntime(t)
			r := &recorder{}
			if tc.mask != "" {
				r.mask = api.MustParseEventMask(tc.mask)
			}
			s := newStub(t, r, rt)
			start(t, s, rt)
			wantMask := r.mask
			if wantMask == 0 {
				wantMask = api.ValidEvents
			}
			if got := pluginInfo(rt, "10-test").Events; got != nrinet.EventMask(wantMask) {
				t.Errorf("the runtime sees a subscription to %v, want %s", got, wantMask.PrettyString())
			}
			if err := lifecycle(context.Background(), rt); err != nil {
				t.Fatal(err)
			}
			got := slices.DeleteFunc(r.recorded(), func(c string) bool { return strings.HasPrefix(c, "Synchronize") })
			if !slices.Equal(got, tc.want) {
				t.Errorf("the plugin got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// narrowPlugin handles RunPodSandbox only.
type narrowPlugin struct {
	mask      api.EventMask
	configErr error
}

func (p narrowPlugin) Configure(context.Context, string, string, string) (stub.EventMask, error) {
	return p.mask, p.configErr
}

func (narrowPlugin) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// TestStub_ConfigureFails: a subscription to an event the plugin does not
// handle, or an error from its Configure, fails Start with the reason.
func TestStub_ConfigureFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin narrowPlugin
		want   string
	}{
		{"unhandled event", narrowPlugin{mask: api.MustParseEventMask("RunPodSandbox,StopPodSandbox")},
			"no handler for: StopPodSandbox (0x2)"},
		{"Configure error", narrowPlugin{configErr: errors.New("bad config")}, "bad config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startRuntime(t)
			s := newStub(t, tc.plugin, rt)
			err := s.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "10-test") {
				t.Fatalf("Start = %v, want an error naming the plugin and containing %q", err, tc.want)
			}
		})
	}
}

// TestStub_Adjustments: what the plugin returns reaches the runtime, and
// a rejection by ValidateContainerAdjustment fails CreateContainer with
// the plugin's reason.
func TestStub_Adjustments(t *testing.T) {
	rt := startRuntime(t)
	r := &recorder{reject: "unwelcome"}
	start(t, newStub(t, r, rt), rt)
	ctx := context.Background()
	if _, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod0}); err != nil {
		t.Fatal(err)
	}
	rsp, err := rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod0, Container: ctr0})
	if err != nil {
		t.Fatal(err)
	}
	if env := rsp.GetAdjust().GetEnv(); len(env) != 1 || env[0].GetKey() != "RECORDED_BY" || env[0].GetValue() != "10-test" {
		t.Errorf("CreateContainer adjusted the environment to %v, want RECORDED_BY=10-test", env)
	}
	bad := &api.Container{Id: "ctr1", PodSandboxId: "pod0", Name: "unwelcome"}
	_, err = rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod0, Container: bad})
	if err == nil || !strings.Contains(err.Error(), `container name "unwelcome" is not welcome`) {
		t.Errorf("CreateContainer of a rejected container = %v, want the plugin's reason", err)
	}
}

// TestStub_Synchronize: the plugin gets the runtime's pods and containers
// when it joins.
func TestStub_Synchronize(t *testing.T) {
	rt := startRuntime(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return []*api.PodSandbox{pod0}, []*api.Container{ctr0}, nil
	}))
	r := &recorder{}
	start(t, newStub(t, r, rt), rt)
	if got := r.recorded(); !slices.Contains(got, "Synchronize 1/1") {
		t.Errorf("the plugin got %v, want Synchronize with 1 pod and 1 container", got)
	}
}

// TestStub_RuntimeInfo: the stub reports the runtime's timeouts and NRI
// version, already inside the plugin's Configure, and the defaults before.
func TestStub_RuntimeInfo(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           []runtime.Option
		nriVersion     string
		reg, req       time.Duration
		rtName, rtVers string
	}{
		{name: "defaults", nriVersion: nrinet.Version, reg: stub.DefaultRegistrationTimeout, req: stub.DefaultRequestTimeout},
		{name: "configured", opts: []runtime.Option{runtime.WithNRIVersion("v9.8.7"),
			runtime.WithRegistrationTimeout(stub.DefaultRegistrationTimeout + 5*time.Millisecond),
			runtime.WithRequestTimeout(stub.DefaultRequestTimeout + 7*time.Millisecond)},
			nriVersion: "v9.8.7", reg: stub.DefaultRegistrationTimeout + 5*time.Millisecond, req: stub.DefaultRequestTimeout + 7*time.Millisecond},
		// A runtime that does not know its NRI version: the stub infers it
		// from the runtime's name and version, as upstream's does.
		{name: "inferred", opts: []runtime.Option{runtime.WithNRIVersion(api.DevelVersion)}, rtName: "containerd", rtVers: "v2.2.0",
			nriVersion: "v0.10.0", reg: stub.DefaultRegistrationTimeout, req: stub.DefaultRequestTimeout},
		{name: "not inferable", opts: []runtime.Option{runtime.WithNRIVersion(api.DevelVersion)}, rtName: "other", rtVers: "v1",
			nriVersion: api.DevelVersion, reg: stub.DefaultRegistrationTimeout, req: stub.DefaultRequestTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startRuntime(t, tc.opts...)
			if tc.rtName != "" {
				rt = renamed(t, rt, tc.rtName, tc.rtVers, tc.opts...)
			}
			r := &recorder{}
			s := newStub(t, r, rt)
			r.mu.Lock()
			r.stub = s
			r.mu.Unlock()
			if v := s.RuntimeNRIVersion(); v != "unknown" {
				t.Errorf("RuntimeNRIVersion before Start = %q, want \"unknown\"", v)
			}
			if reg, req := s.RegistrationTimeout(), s.RequestTimeout(); reg != stub.DefaultRegistrationTimeout || req != stub.DefaultRequestTimeout {
				t.Errorf("timeouts before Start = %v, %v; want the defaults", reg, req)
			}
			start(t, s, rt)
			if v := s.RuntimeNRIVersion(); v != tc.nriVersion {
				t.Errorf("RuntimeNRIVersion = %q, want %q", v, tc.nriVersion)
			}
			if reg, req := s.RegistrationTimeout(), s.RequestTimeout(); reg != tc.reg || req != tc.req {
				t.Errorf("timeouts = %v, %v; want %v, %v", reg, req, tc.reg, tc.req)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.nriVersion != tc.nriVersion || r.timeouts != [2]time.Duration{tc.reg, tc.req} {
				t.Errorf("in Configure: RuntimeNRIVersion %q and timeouts %v; want %q and %v, %v", r.nriVersion, r.timeouts, tc.nriVersion, tc.reg, tc.req)
			}
			if want := "stub-test"; tc.rtName == "" && (r.runtime != want || r.version != "v1.0.0") {
				t.Errorf("Configure got runtime %q %q, want %q v1.0.0", r.runtime, r.version, want)
			}
			if v := s.PluginNRIVersion(); v != nrinet.Version {
				t.Errorf("PluginNRIVersion = %q, want %q", v, nrinet.Version)
			}
		})
	}
}

// renamed replaces rt by a runtime of another name and version on a
// socket of its own.
func renamed(t *testing.T, rt *testRuntime, name, version string, opts ...runtime.Option) *testRuntime {
	t.Helper()
	rt.stop()
	sock := filepath.Join(filepath.Dir(rt.sock), "renamed.sock")
	r, err := runtime.New(name, version, append([]runtime.Option{runtime.WithSocketPath(sock), runtime.WithPluginPath("")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			r.Stop(ctx)
		})
	}
	t.Cleanup(stop)
	return &testRuntime{Runtime: r, sock: sock, stop: stop}
}

// TestStub_UpdateContainers: without a connection UpdateContainers fails
// with ErrNoService; connected, the updates reach the runtime's
// UpdateFunc and the failed ones come back.
func TestStub_UpdateContainers(t *testing.T) {
	got := make(chan []*api.ContainerUpdate, 1)
	rt := startRuntime(t, runtime.WithUpdateFunc(func(_ context.Context, _ string, updates []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
		got <- updates
		return updates[1:], nil
	}))
	s := newStub(t, narrowPlugin{}, rt)
	updates := []*api.ContainerUpdate{
		{ContainerId: "ctr0", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{RdtClass: api.String("gold")}}},
		{ContainerId: "ctr1", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{RdtClass: api.String("silver")}}},
	}
	if _, err := s.UpdateContainers(updates); !errors.Is(err, stub.ErrNoService) {
		t.Fatalf("UpdateContainers before Start = %v, want ErrNoService", err)
	}
	start(t, s, rt)
	failed, err := s.UpdateContainers(updates)
	if err != nil {
		t.Fatal(err)
	}
	if ids := containerIDs(receive(t, got, "the runtime's UpdateFunc")); !slices.Equal(ids, []string{"ctr0", "ctr1"}) {
		t.Errorf("the runtime got updates of %v, want ctr0 and ctr1", ids)
	}
	if ids := containerIDs(failed); !slices.Equal(ids, []string{"ctr1"}) {
		t.Errorf("UpdateContainers returned failed updates of %v, want ctr1", ids)
	}
	s.Stop()
	s.Wait()
	if _, err := s.UpdateContainers(updates); !errors.Is(err, stub.ErrNoService) {
		t.Fatalf("UpdateContainers after Stop = %v, want ErrNoService", err)
	}
}

func containerIDs(updates []*api.ContainerUpdate) []string {
	var ids []string
	for _, u := range updates {
		ids = append(ids, u.GetContainerId())
	}
	return ids
}

// blocker blocks in RunPodSandbox until released.
type blocker struct{ arrived, release chan struct{} }

func (b blocker) RunPodSandbox(context.Context, *api.PodSandbox) error {
	b.arrived <- struct{}{}
	<-b.release
	return nil
}

// TestStub_WithFailurePolicy: the runtime applies the policy the plugin
// asked for: with FailRequest and KeepConnected, a plugin that times out
// fails the request and stays connected; without a policy it is dropped
// and the request succeeds.
func TestStub_WithFailurePolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   *api.FailurePolicy
		wantErr  bool
		wantKept bool
	}{
		{name: "no policy", wantErr: false, wantKept: false},
		{name: "fail and keep", policy: &api.FailurePolicy{FailRequest: true, KeepConnected: true}, wantErr: true, wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startRuntime(t, runtime.WithRequestTimeout(500*time.Millisecond))
			b := blocker{arrived: make(chan struct{}, 1), release: make(chan struct{})}
			var opts []stub.Option
			if tc.policy != nil {
				opts = append(opts, stub.WithFailurePolicy(tc.policy))
			}
			s := newStub(t, b, rt, opts...)
			start(t, s, rt)
			defer close(b.release) // before the stub is stopped
			_, err := rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod0})
			receive(t, b.arrived, "RunPodSandbox")
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("RunPodSandbox = %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("RunPodSandbox = %v, want a deadline error", err)
			}
			if tc.wantKept {
				if !rt.PluginConnected("10-test") {
					t.Error("the plugin was dropped, want it kept")
				}
			} else {
				waitFor(t, "the plugin to be dropped", func() bool { return !rt.PluginConnected("10-test") })
			}
		})
	}
}

// TestStub_OnClose: the on-close callback runs when the runtime goes away
// and may call Stop and Wait, as upstream's plugins do.
func TestStub_OnClose(t *testing.T) {
	rt := startRuntime(t)
	var s stub.Stub
	closed := make(chan struct{})
	s = newStub(t, narrowPlugin{}, rt, stub.WithOnClose(func() {
		s.Stop()
		s.Wait()
		close(closed)
	}))
	start(t, s, rt)
	rt.stop()
	receive(t, closed, "the on-close callback to return")
	s.Wait()
}

// TestStub_Run: Run returns ctx.Err() once ctx is cancelled and nil when
// the runtime shut the plugin down; the stub runs again afterwards.
func TestStub_Run(t *testing.T) {
	rt := startRuntime(t)
	s := newStub(t, narrowPlugin{}, rt)
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		waitFor(t, fmt.Sprintf("the plugin to join (round %d)", round), func() bool { return pluginInfo(rt, "10-test") != nil })
		cancel()
		if err := receive(t, done, "Run to return"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v after cancel, want context.Canceled", err)
		}
		waitFor(t, "the plugin to leave", func() bool { return pluginInfo(rt, "10-test") == nil })
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	waitFor(t, "the plugin to join", func() bool { return pluginInfo(rt, "10-test") != nil })
	rt.stop()
	if err := receive(t, done, "Run to return"); err != nil {
		t.Fatalf("Run = %v after the runtime shut the plugin down, want nil", err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run without a runtime = nil, want why it could not connect")
	}
}

// TestStub_Connection: WithDialer and WithConnection replace dialing the
// socket path; WithTTRPCOptions' interceptors see the calls.
func TestStub_Connection(t *testing.T) {
	t.Run("WithDialer", func(t *testing.T) {
		rt := startRuntime(t)
		dialed := make(chan string, 1)
		s := newStub(t, narrowPlugin{}, rt, stub.WithDialer(func(path string) (net.Conn, error) {
			dialed <- path
			return net.Dial("unix", path)
		}))
		start(t, s, rt)
		if got := receive(t, dialed, "the dialer"); got != rt.sock {
			t.Errorf("the dialer got %q, want %q", got, rt.sock)
		}
	})
	t.Run("WithConnection", func(t *testing.T) {
		rt := startRuntime(t)
		conn, err := net.Dial("unix", rt.sock)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stub.New(narrowPlugin{}, stub.WithPluginName("test"), stub.WithPluginIdx("10"), stub.WithLogger(&logRecorder{}),
			stub.WithSocketPath(filepath.Join(t.TempDir(), "nothing-here.sock")), stub.WithConnection(conn))
		if err != nil {
			t.Fatal(err)
		}
		start(t, s, rt)
	})
	t.Run("WithTTRPCOptions", func(t *testing.T) {
		rt := startRuntime(t)
		seen := make(chan string, 16)
		s := newStub(t, narrowPlugin{}, rt, stub.WithTTRPCOptions(nil, []ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(
			func(ctx context.Context, u ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (interface{}, error) {
				seen <- info.FullMethod
				return m(ctx, u)
			})}))
		start(t, s, rt)
		if got := receive(t, seen, "the server interceptor"); got != "/nri.pkg.api.v1alpha1.Plugin/Configure" {
			t.Errorf("the interceptor saw %s first, want Configure", got)
		}
	})
}

// TestNew_Errors: New refuses a plugin without event handlers and invalid
// options, with an error saying why.
func TestNew_Errors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin any
		opts   []stub.Option
		want   string
	}{
		{"no event handler", struct{}{}, nil, "implements no NRI event handler"},
		{"Configure only", configureOnly{}, nil, "implements no NRI event handler"},
		{"nil failure policy", narrowPlugin{}, []stub.Option{stub.WithFailurePolicy(nil)}, "WithFailurePolicy: nil policy"},
		{"index twice", narrowPlugin{}, []stub.Option{stub.WithPluginIdx("10"), stub.WithPluginIdx("20")}, `WithPluginIdx("20"): plugin index already set to "10"`},
		{"bad index", narrowPlugin{}, []stub.Option{stub.WithPluginIdx("x")}, `invalid plugin index "x"`},
		{"bad name", narrowPlugin{}, []stub.Option{stub.WithPluginName("a/b")}, "WithPluginName"},
		{"nil dialer", narrowPlugin{}, []stub.Option{stub.WithDialer(nil)}, "WithDialer: nil dialer"},
		{"nil logger", narrowPlugin{}, []stub.Option{stub.WithLogger(nil)}, "WithLogger: nil logger"},
		{"no index", narrowPlugin{}, nil, `plugin "test": no plugin index`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]stub.Option{stub.WithPluginName("test"), stub.WithLogger(&logRecorder{})}, tc.opts...)
			_, err := stub.New(tc.plugin, opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := stub.New(struct{}{}, stub.WithPluginName("x"), stub.WithPluginIdx("10"), stub.WithLogger(&logRecorder{})); !errors.Is(err, plugin.ErrNoHandlers) {
		t.Errorf("New of a plugin without handlers = %v, want one wrapping plugin.ErrNoHandlers", err)
	}
}

type configureOnly struct{}

func (configureOnly) Configure(context.Context, string, string, string) (stub.EventMask, error) {
	return 0, nil
}

// logRecorder is an NRI logger that keeps what it is told.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) add(level, format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, args...))
}

func (l *logRecorder) Debugf(_ context.Context, format string, args ...interface{}) {
	l.add("debug", format, args...)
}
func (l *logRecorder) Infof(_ context.Context, format string, args ...interface{}) {
	l.add("info", format, args...)
}
func (l *logRecorder) Warnf(_ context.Context, format string, args ...interface{}) {
	l.add("warn", format, args...)
}
func (l *logRecorder) Errorf(_ context.Context, format string, args ...interface{}) {
	l.add("error", format, args...)
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logRecorder) has(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(s string) bool { return strings.Contains(s, part) })
}

// TestWithLogger: the stub's messages and those of nrinet's plugin
// library beneath it go to the logger given.
func TestWithLogger(t *testing.T) {
	rt := startRuntime(t)
	l := &logRecorder{}
	s := newStub(t, narrowPlugin{}, rt, stub.WithLogger(l))
	if s.Logger() != l {
		t.Error("Logger() is not the logger given")
	}
	start(t, s, rt)
	for _, want := range []string{
		"info Created plugin 10-test", // the stub's
		"info Subscribing plugin 10-test for events RunPodSandbox",
		"info configured plugin=10-test runtime=stub-test", // nrinet's plugin library's
	} {
		if !l.has(want) {
			t.Errorf("the logger got no line containing %q", want)
		}
	}
}
