package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
	"github.com/nrinet/nrinet/validator"
)

// evictor asks for evictions when a container is created or updated; with
// conflict it also sets an annotation another evictor sets.
type evictor struct{ victim string }

func (e evictor) CreateContainerEvict(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	var adj *api.ContainerAdjustment
	if ctr.GetAnnotations()["conflict"] == "yes" {
		adj = &api.ContainerAdjustment{Annotations: map[string]string{"taken": e.victim}}
	}
	return adj, nil, []*api.ContainerEviction{{ContainerId: e.victim, Reason: "make room for " + ctr.GetId()}}, nil
}

func (e evictor) UpdateContainerEvict(_ context.Context, _ *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, []*api.ContainerEviction{{ContainerId: e.victim, Reason: "grow " + ctr.GetId()}}, nil
}

type evictLog struct {
	mu  sync.Mutex
	got []string
}

func (l *evictLog) evict(_ context.Context, plugin string, list []*api.ContainerEviction) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range list {
		l.got = append(l.got, plugin+" "+e.GetContainerId()+" "+e.GetReason())
	}
	return nil
}

func (l *evictLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.got, "; ")
	l.got = nil
	return s
}

func TestRuntime_EvictionsDelivered(t *testing.T) {
	log := &evictLog{}
	e := newEnv(t, runtime.WithEvictFunc(log.evict))
	s := e.startPlugin(evictor{"old-1"}, "10", "a")
	e.startPlugin(evictor{"old-2"}, "20", "b")
	ctx := context.Background()
	pod := testPod(1)
	ctr := testContainer(pod, 1)

	if _, err := e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	want := "10-a old-1 make room for " + ctr.GetId() + "; 20-b old-2 make room for " + ctr.GetId()
	if got := log.take(); got != want {
		t.Errorf("after CreateContainer evicted %q, want %q", got, want)
	}

	if _, err := e.rt.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); got != "10-a old-1 grow "+ctr.GetId()+"; 20-b old-2 grow "+ctr.GetId() {
		t.Errorf("after UpdateContainer evicted %q", got)
	}

	if _, err := s.UpdateContainers(ctx, nil, []*api.ContainerEviction{{ContainerId: "old-3", Reason: "pressure"}}); err != nil {
		t.Fatal(err)
	}
	var got string
	waitFor(t, "the eviction asked through UpdateContainers", func() bool { got = log.take(); return got != "" })
	if got != "10-a old-3 pressure" {
		t.Errorf("after UpdateContainers evicted %q", got)
	}

	// A failed creation evicts nothing: the room is not needed.
	bad := testContainer(pod, 2)
	bad.Annotations = map[string]string{"conflict": "yes"}
	if _, err := e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: bad}); err == nil {
		t.Fatal("conflicting creation succeeded")
	}
	if got := log.take(); got != "" {
		t.Errorf("a failed creation evicted %q", got)
	}
}

func TestRuntime_EvictionsRefusedWithoutEvictFunc(t *testing.T) {
	e := newEnv(t)
	s := e.startPlugin(evictor{"old-1"}, "10", "a")
	_, err := s.UpdateContainers(context.Background(), nil, []*api.ContainerEviction{{ContainerId: "old-3", Reason: "pressure"}})
	if err == nil || !strings.Contains(err.Error(), "old-3 (pressure)") {
		t.Fatalf("UpdateContainers = %v, want an error naming the eviction", err)
	}
	if !strings.Contains(e.logs.String(), "no EvictFunc") {
		t.Errorf("refused eviction not logged:\n%s", e.logs.String())
	}
}

// resizer changes the resources of the container being updated and asks
// for a pids limit on another.
type resizer struct{}

func (resizer) UpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return []*api.ContainerUpdate{
		{ContainerId: ctr.GetId(), Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}}}},
		{ContainerId: "other", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Pids: &api.LinuxPids{Limit: 99}}}},
	}, nil
}

func TestRuntime_UpdateContainerMerges(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(resizer{}, "10", "resizer")
	pod := testPod(1)
	ctr := testContainer(pod, 1)
	rsp, err := e.rt.UpdateContainer(context.Background(), &api.UpdateContainerRequest{Pod: pod, Container: ctr,
		LinuxResources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 20}}}})
	if err != nil {
		t.Fatal(err)
	}
	ups := rsp.GetUpdate()
	if len(ups) != 2 || ups[0].GetContainerId() != "other" || ups[1].GetContainerId() != ctr.GetId() {
		t.Fatalf("updates %v: want other's, then the target's", ups)
	}
	if ups[0].GetLinux().GetResources().GetPids().GetLimit() != 99 {
		t.Errorf("pids limit of the other container lost: %v", ups[0])
	}
	tr := ups[1].GetLinux().GetResources()
	if tr.GetCpu().GetCpus() != "1" || tr.GetMemory().GetLimit().GetValue() != 1<<20 {
		t.Errorf("target resources %v, want the requested memory and the plugin's cpus", tr)
	}
}

// policy is a built-in validator: no annotation "team", and pods need
// plugin "needed".
type policy struct{}

func (policy) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if _, ok := req.GetAdjust().GetAnnotations()["team"]; ok {
		return errors.New("annotation team is not allowed")
	}
	return nil
}

func (policy) ValidatePodSandbox(_ context.Context, _ *api.PodSandbox, plugins []*api.PluginInstance) error {
	for _, p := range plugins {
		if p.GetName() == "needed" {
			return nil
		}
	}
	return errors.New(`required plugin "needed" is not present`)
}

func TestRuntime_BuiltinValidator(t *testing.T) {
	e := newEnv(t, runtime.WithValidator("00-policy", policy{}))
	e.startPlugin(adjuster{"team", "red"}, "10", "one")
	ctx := context.Background()
	pod := testPod(1)
	_, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	var rej *runtime.RejectedError
	if !errors.As(err, &rej) || rej.Validator != "00-policy" || !strings.Contains(err.Error(), `required plugin "needed"`) {
		t.Fatalf("RunPodSandbox = %v, want a rejection by 00-policy", err)
	}
	e.startPlugin(newRecorder(), "50", "needed")
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatalf("RunPodSandbox with the required plugin: %v", err)
	}
	_, err = e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), `validator "00-policy" rejected the adjustment of container`) {
		t.Fatalf("CreateContainer = %v, want a rejection", err)
	}
}

func TestRuntime_WithValidatorChecks(t *testing.T) {
	for _, opts := range [][]runtime.Option{
		{runtime.WithValidator("", policy{})},
		{runtime.WithValidator("00-x", nil)},
		{runtime.WithValidator("00-x", policy{}), runtime.WithValidator("00-x", policy{})},
		{runtime.WithEvictFunc(nil)},
	} {
		if _, err := runtime.New("t", "v", opts...); err == nil {
			t.Errorf("New accepted a bad option set (%d options)", len(opts))
		}
	}
}

// nsAdjuster moves containers into another network namespace.
type nsAdjuster struct{}

func (nsAdjuster) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}}}}, nil, nil
}

func TestRuntime_DefaultValidator(t *testing.T) {
	v := validator.New(validator.Config{Enable: true, RejectNamespaceAdjustment: true})
	e := newEnv(t, runtime.WithValidator("00-default-validator", v))
	e.startPlugin(nsAdjuster{}, "10", "netns")
	ctx := context.Background()

	pod := testPod(1)
	pod.Annotations = map[string]string{api.RequiredPluginsAnnotation + "/pod": `["audit"]`}
	_, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	if err == nil || !strings.Contains(err.Error(), `required plugin "audit"`) || !strings.Contains(err.Error(), `"00-default-validator"`) {
		t.Fatalf("RunPodSandbox of a pod requiring a missing plugin = %v", err)
	}
	e.startPlugin(newRecorder(), "90", "audit")
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatalf("RunPodSandbox with the required plugin present: %v", err)
	}
	_, err = e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err == nil || !strings.Contains(err.Error(), `plugin "10-netns" adjusted namespace "network"`) {
		t.Fatalf("CreateContainer with a namespace adjustment = %v", err)
	}
}

// TestRuntime_ConnectBuiltinPlugin runs a plugin inside the test's own
// process over a net.Pipe: a builtin plugin, with no socket at all.
func TestRuntime_ConnectBuiltinPlugin(t *testing.T) {
	e := newEnv(t, runtime.WithoutExternalPlugins())
	rtEnd, plEnd := net.Pipe()
	s, err := plugin.New(adjuster{"builtin", "yes"}, plugin.WithPluginName("builtin"), plugin.WithPluginIdx("05"),
		plugin.WithConnection(plEnd), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- e.rt.Connect(context.Background(), rtEnd) }()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := <-errc; err != nil {
		t.Fatalf("Connect: %v", err)
	}
	pod := testPod(1)
	rsp, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err != nil || rsp.GetAdjust().GetAnnotations()["builtin"] != "yes" {
		t.Fatalf("CreateContainer = %v, %v", rsp, err)
	}
	if ps := e.rt.Plugins(); len(ps) != 1 || ps[0].Name != "05-builtin" {
		t.Errorf("plugins %+v", ps)
	}
}

func TestRuntime_ConnectSilentPeer(t *testing.T) {
	e := newEnv(t, runtime.WithoutExternalPlugins(), runtime.WithRegistrationTimeout(100*time.Millisecond))
	rtEnd, other := net.Pipe()
	t.Cleanup(func() { other.Close() })
	go io.Copy(io.Discard, other)
	err := e.rt.Connect(context.Background(), rtEnd)
	if err == nil || !strings.Contains(err.Error(), "did not register") {
		t.Fatalf("Connect to a silent peer = %v", err)
	}
}

// TestRuntime_EvictFuncMayCallTheRuntime: the EvictFunc runs after the
// request released the runtime, so evicting through the same Runtime works
// even while a plugin is joining (which waits for running requests); the
// same holds for evictions a plugin asks for with UpdateContainers from
// inside its own CreateContainer handler.
func TestRuntime_EvictFuncMayCallTheRuntime(t *testing.T) {
	for _, viaUpdateContainers := range []bool{false, true} {
		t.Run(fmt.Sprintf("UpdateContainers=%v", viaUpdateContainers), func(t *testing.T) {
			var e *env
			var late *plugin.Stub
			stopped := make(chan error, 2)
			e = newEnv(t, runtime.WithEvictFunc(func(ctx context.Context, _ string, list []*api.ContainerEviction) error {
				joining, err := plugin.New(newRecorder(), plugin.WithPluginName("late"), plugin.WithPluginIdx("50"),
					plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
				if err == nil {
					late = joining
					err = joining.Start(context.Background()) // joins in the background
				}
				if err != nil {
					stopped <- err
					return err
				}
				// Start returned once the plugin was configured: it is
				// now joining.
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				pod := testPod(1)
				_, err = e.rt.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: &api.Container{Id: list[0].GetContainerId(), PodSandboxId: pod.GetId()}})
				stopped <- err
				return err
			}))
			if viaUpdateContainers {
				h := &selfEvictor{}
				h.stub.Store(e.startPlugin(h, "10", "a"))
			} else {
				e.startPlugin(evictor{"old-1"}, "10", "a")
			}
			pod := testPod(1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("StopContainer from the EvictFunc: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the EvictFunc's call into the runtime is stuck")
			}
			if late != nil {
				late.Stop()
			}
		})
	}
}

// selfEvictor asks for an eviction through UpdateContainers from inside
// its CreateContainer handler.
type selfEvictor struct{ stub atomic.Pointer[plugin.Stub] }

func (s *selfEvictor) CreateContainer(ctx context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	_, err := s.stub.Load().UpdateContainers(ctx, nil, []*api.ContainerEviction{{ContainerId: "old-9", Reason: "room"}})
	return nil, nil, err
}

func TestRuntime_CreateContainerWithOwners(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(adjuster{"a.example.com/x", "1"}, "10", "one")
	e.startPlugin(adjuster{"b.example.com/x", "2"}, "20", "two")
	pod := testPod(1)
	ctr := testContainer(pod, 1)
	_, owners, err := e.rt.CreateContainerWithOwners(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := owners.AnnotationOwner(ctr.GetId(), "b.example.com/x"); got != "20-two" {
		t.Errorf("owner of annotation b.example.com/x = %q, want 20-two", got)
	}
	if got, _ := owners.EnvOwner(ctr.GetId(), "SEEN_1"); got != "10-one" {
		t.Errorf("owner of env SEEN_1 = %q, want 10-one", got)
	}
}

// slowValidator answers late: it is a plugin that takes longer than its
// deadline (the plugin's own copy of the deadline may fire a moment before
// the runtime's, so it keeps working a little past it).
type slowValidator struct{}

func (slowValidator) ValidateContainerAdjustment(ctx context.Context, _ *api.ValidateContainerAdjustmentRequest) error {
	<-ctx.Done()
	time.Sleep(20 * time.Millisecond) // the lateness under test: nothing to wait for
	return nil
}

func TestRuntime_ValidatorTimeout(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepConnected=%v", keep), func(t *testing.T) {
			e := newEnv(t, runtime.WithRequestTimeout(200*time.Millisecond))
			e.startPlugin(slowValidator{}, "90", "slow", plugin.WithFailurePolicy(&api.FailurePolicy{KeepConnected: keep}))
			pod := testPod(1)
			_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
			var perr *runtime.PluginError
			if !errors.As(err, &perr) || perr.Plugin != "90-slow" {
				t.Fatalf("CreateContainer = %v, want it failed by 90-slow", err)
			}
			if keep {
				if !e.joined("90-slow") {
					t.Error("a validator whose policy says keep_connected was disconnected after a timeout")
				}
			} else {
				waitFor(t, "the timed-out validator to be dropped", func() bool { return !e.joined("90-slow") })
			}
		})
	}
}

func TestRuntime_BuiltinValidatorTimeout(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(100*time.Millisecond), runtime.WithValidator("00-slow", slowValidator{}))
	pod := testPod(1)
	_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	var rej *runtime.RejectedError
	if !errors.As(err, &rej) || rej.Validator != "00-slow" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CreateContainer = %v, want 00-slow failed by its deadline", err)
	}
}

// barrier is a built-in validator that returns only once n validators
// are in it at the same time: validators must run concurrently.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{} // closed when the n-th arrives
}

func (b *barrier) ValidateContainerAdjustment(ctx context.Context, _ *api.ValidateContainerAdjustmentRequest) error {
	b.mu.Lock()
	if b.arrived++; b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return errors.New("the other validators never ran alongside")
	}
}

func TestRuntime_ValidatorsRunConcurrently(t *testing.T) {
	b := &barrier{n: 3, all: make(chan struct{})}
	e := newEnv(t, runtime.WithRequestTimeout(2*time.Second),
		runtime.WithValidator("00-a", b), runtime.WithValidator("01-b", b), runtime.WithValidator("02-c", b))
	pod := testPod(1)
	if _, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)}); err != nil {
		t.Fatal(err)
	}
}

// hangingCreate never answers CreateContainer until released.
type hangingCreate struct{ release chan struct{} }

func (h hangingCreate) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	<-h.release
	return nil, nil, nil
}

// TestRuntime_RequiredPluginDroppedDuringTheRequestIsMissing: a required
// plugin dropped for a timeout while handling the container's creation is
// not present when the validators run, so the creation is refused (the
// container would otherwise lack what the plugin does; upstream's check
// lists it as consulted and lets the container through).
func TestRuntime_RequiredPluginDroppedDuringTheRequestIsMissing(t *testing.T) {
	v := validator.New(validator.Config{Enable: true, RequiredPlugins: []string{"slow"}})
	e := newEnv(t, runtime.WithValidator("00-default-validator", v), runtime.WithRequestTimeout(100*time.Millisecond))
	h := hangingCreate{release: make(chan struct{})}
	defer close(h.release)
	e.startPlugin(h, "10", "slow")
	pod := testPod(1)
	_, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)})
	if err == nil || !strings.Contains(err.Error(), `required plugin "slow"`) {
		t.Fatalf("CreateContainer after the required plugin was dropped = %v, want a refusal naming it", err)
	}
}
