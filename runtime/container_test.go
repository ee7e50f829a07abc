package runtime_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
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
	if got := log.take(); got != "10-a old-3 pressure" {
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
// even while a plugin is joining (which waits for running requests).
func TestRuntime_EvictFuncMayCallTheRuntime(t *testing.T) {
	var e *env
	joined := make(chan struct{})
	evicted := make(chan error, 1)
	e = newEnv(t, runtime.WithEvictFunc(func(ctx context.Context, _ string, list []*api.ContainerEviction) error {
		go func() {
			e.startPlugin(newRecorder(), "50", "late")
			close(joined)
		}()
		time.Sleep(50 * time.Millisecond) // the joining plugin now waits to synchronize
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		pod := testPod(1)
		_, err := e.rt.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: &api.Container{Id: list[0].GetContainerId(), PodSandboxId: pod.GetId()}})
		evicted <- err
		return err
	}))
	e.startPlugin(evictor{"old-1"}, "10", "a")
	pod := testPod(1)
	if _, err := e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := <-evicted; err != nil {
		t.Fatalf("StopContainer from the EvictFunc: %v", err)
	}
	<-joined
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
