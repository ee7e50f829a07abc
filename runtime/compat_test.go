package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
)

// oldPlugin is a plugin built before NRI v0.12: it has no dedicated
// RunPodSandbox RPC and receives pod events through StateChange.
type oldPlugin struct {
	rawPlugin
	mu     sync.Mutex
	events []api.Event
}

func (p *oldPlugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method RunPodSandbox not implemented")
}

func (p *oldPlugin) StateChange(_ context.Context, ev *api.StateChangeEvent) (*api.Empty, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev.GetEvent())
	return &api.Empty{}, nil
}

func TestRuntime_StateChangeFallback(t *testing.T) {
	e := newEnv(t)
	old := &oldPlugin{rawPlugin: rawPlugin{events: int32(api.MaskFor(api.Event_RUN_POD_SANDBOX))}}
	rt, _ := connectRaw(t, e.dial(), old)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "old", PluginIdx: "10"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "old plugin to join", func() bool { return e.joined("10-old") })
	for i := range 2 {
		if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(i)}); err != nil {
			t.Fatalf("RunPodSandbox %d: %v", i, err)
		}
	}
	old.mu.Lock()
	got := old.events
	old.mu.Unlock()
	if len(got) != 2 || got[0] != api.Event_RUN_POD_SANDBOX {
		t.Fatalf("StateChange events %v, want RunPodSandbox twice", got)
	}
	if !contains(e.logs.String(), "deprecated StateChange") {
		t.Errorf("no deprecation warning logged:\n%s", e.logs)
	}
}

// updater answers UpdateContainer and StopContainer with fixed updates.
type updater struct {
	shares uint64
	target bool // also update the container being updated
}

func (u updater) update(id string) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
		Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: u.shares}},
	}}}
}

func (u updater) UpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	out := []*api.ContainerUpdate{}
	if u.target {
		out = append(out, u.update(ctr.GetId()))
	}
	return out, nil
}

func (u updater) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return []*api.ContainerUpdate{u.update("sibling")}, nil
}

func TestRuntime_UpdateAndStopContainer(t *testing.T) {
	e := newEnv(t)
	e.startPlugin(updater{shares: 512, target: true}, "10", "tuner")
	pod := testPod(1)
	ctr := testContainer(pod, 1)
	req := &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: &api.LinuxResources{
		Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}},
	}}
	rsp, err := e.rt.UpdateContainer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ups := rsp.GetUpdate()
	if len(ups) != 1 || ups[0].GetContainerId() != ctr.GetId() {
		t.Fatalf("updates = %v, want one for the target", ups)
	}
	res := ups[0].GetLinux().GetResources()
	if res.GetCpu().GetShares().GetValue() != 512 || res.GetMemory().GetLimit().GetValue() != 1<<30 {
		t.Errorf("target resources = %v, want the request's memory limit and the plugin's CPU shares", res)
	}

	srsp, err := e.rt.StopContainer(context.Background(), &api.StopContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	if got := srsp.GetUpdate(); len(got) != 1 || got[0].GetContainerId() != "sibling" {
		t.Fatalf("StopContainer updates = %v", got)
	}

	e.startPlugin(updater{shares: 2}, "20", "other") // conflicts only in StopContainer
	if _, err := e.rt.StopContainer(context.Background(), &api.StopContainerRequest{Pod: pod, Container: ctr}); err == nil ||
		!contains(err.Error(), `plugins "20-other" and "10-tuner" both tried to set CPUShares of container "sibling"`) {
		t.Fatalf("StopContainer with conflicting plugins = %v", err)
	}
}
