package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// extPod is a pod with the pod network extension's fields set.
func extPod(n int) *api.PodSandbox {
	pod := testPod(n)
	pod.PortMappings = []*api.PortMapping{
		{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 80, HostPort: 18080},
		{Protocol: api.Protocol_PROTOCOL_UDP, ContainerPort: 53, HostPort: 18053, HostIp: "198.18.0.1"},
	}
	pod.DnsConfig = &api.PodDNSConfig{Servers: []string{"198.18.0.53"}, Searches: []string{"svc.example.test"}, Options: []string{"ndots:5"}}
	return pod
}

// hasExtension reports whether the pod carries any extension field.
func hasExtension(pod *api.PodSandbox) bool {
	return len(pod.GetPortMappings()) > 0 || pod.GetDnsConfig() != nil
}

// podSpy records every pod a plugin is sent, by method. Its plugins speak
// the protocol by hand, as a plugin built on upstream's stub does: they
// never answer Configure with network_extension.
type podSpy struct {
	mu   sync.Mutex
	pods map[string][]*api.PodSandbox // method → pods received
}

func (s *podSpy) record(method string, pods ...*api.PodSandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string][]*api.PodSandbox{}
	}
	s.pods[method] = append(s.pods[method], pods...)
}

func (s *podSpy) received() map[string][]*api.PodSandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]*api.PodSandbox{}
	for m, pods := range s.pods {
		out[m] = slices.Clone(pods)
	}
	return out
}

// classicPlugin serves every method of the Plugin service and records the
// pods it is sent. With stateChange it lacks the dedicated pod and
// container event RPCs, like a plugin built before NRI v0.12.
type classicPlugin struct {
	spy         *podSpy
	events      api.EventMask
	stateChange bool
}

var errUnimplemented = status.Error(codes.Unimplemented, "not implemented")

func (p *classicPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(p.events)}, nil
}

func (p *classicPlugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	p.spy.record("Synchronize", req.GetPods()...)
	return &api.SynchronizeResponse{More: req.GetMore()}, nil
}

func (p *classicPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// event records the pod of a dedicated event RPC, or refuses the RPC when
// the plugin only has StateChange.
func (p *classicPlugin) event(method string, pod *api.PodSandbox) error {
	if p.stateChange {
		return errUnimplemented
	}
	p.spy.record(method, pod)
	return nil
}

func (p *classicPlugin) RunPodSandbox(_ context.Context, r *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, p.event("RunPodSandbox", r.GetPod())
}

func (p *classicPlugin) UpdatePodSandbox(_ context.Context, r *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	p.spy.record("UpdatePodSandbox", r.GetPod())
	return &api.UpdatePodSandboxResponse{}, nil
}

func (p *classicPlugin) PostUpdatePodSandbox(_ context.Context, r *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, p.event("PostUpdatePodSandbox", r.GetPod())
}

func (p *classicPlugin) StopPodSandbox(_ context.Context, r *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, p.event("StopPodSandbox", r.GetPod())
}

func (p *classicPlugin) RemovePodSandbox(_ context.Context, r *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, p.event("RemovePodSandbox", r.GetPod())
}

func (p *classicPlugin) CreateContainer(_ context.Context, r *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.spy.record("CreateContainer", r.GetPod())
	return &api.CreateContainerResponse{}, nil
}

func (p *classicPlugin) PostCreateContainer(_ context.Context, r *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, p.event("PostCreateContainer", r.GetPod())
}

func (p *classicPlugin) StartContainer(_ context.Context, r *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, p.event("StartContainer", r.GetPod())
}

func (p *classicPlugin) PostStartContainer(_ context.Context, r *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, p.event("PostStartContainer", r.GetPod())
}

func (p *classicPlugin) UpdateContainer(_ context.Context, r *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	p.spy.record("UpdateContainer", r.GetPod())
	return &api.UpdateContainerResponse{}, nil
}

func (p *classicPlugin) PostUpdateContainer(_ context.Context, r *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, p.event("PostUpdateContainer", r.GetPod())
}

func (p *classicPlugin) StopContainer(_ context.Context, r *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	p.spy.record("StopContainer", r.GetPod())
	return &api.StopContainerResponse{}, nil
}

func (p *classicPlugin) RemoveContainer(_ context.Context, r *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, p.event("RemoveContainer", r.GetPod())
}

func (p *classicPlugin) StateChange(_ context.Context, ev *api.StateChangeEvent) (*api.Empty, error) {
	p.spy.record("StateChange", ev.GetPod())
	return &api.Empty{}, nil
}

func (p *classicPlugin) ValidateContainerAdjustment(_ context.Context, r *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	p.spy.record("ValidateContainerAdjustment", r.GetPod())
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

func (p *classicPlugin) PodSandboxStatus(_ context.Context, r *api.PodSandboxStatusRequest) (*api.PodSandboxStatusResponse, error) {
	p.spy.record("PodSandboxStatus", r.GetPod())
	return &api.PodSandboxStatusResponse{}, nil
}

// extRecorder is a plugin on the plugin library, which negotiates the
// extension: it records the pods of the events it handles.
type extRecorder struct{ spy *podSpy }

func (r extRecorder) Synchronize(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	r.spy.record("Synchronize", pods...)
	return nil, nil
}

func (r extRecorder) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.spy.record("RunPodSandbox", pod)
	return nil
}

func (r extRecorder) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.spy.record("StopPodSandbox", pod)
	return nil
}

func (r extRecorder) StartContainer(_ context.Context, pod *api.PodSandbox, _ *api.Container) error {
	r.spy.record("StartContainer", pod)
	return nil
}

// TestRuntime_PodExtensionFieldsOnlyForExtensionPlugins walks a pod with
// port mappings and a DNS configuration through every event: plugins
// that speak the protocol as upstream's stub does (dedicated RPCs, or
// StateChange) never see those fields, in any request or in Synchronize;
// a plugin on the plugin library, which negotiates the extension, sees
// them; and the caller's requests are left as they were.
func TestRuntime_PodExtensionFieldsOnlyForExtensionPlugins(t *testing.T) {
	synced := extPod(0)
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return []*api.PodSandbox{synced}, nil, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	classic, old, ext := &podSpy{}, &podSpy{}, &podSpy{}
	all := api.ClassicEvents | api.NetworkEvents // a raw plugin may ask for POD_SANDBOX_STATUS too
	for _, p := range []struct {
		name string
		svc  *classicPlugin
	}{
		{"classic", &classicPlugin{spy: classic, events: all}},
		{"old", &classicPlugin{spy: old, events: all &^ api.MaskFor(api.Event_VALIDATE_CONTAINER_ADJUSTMENT), stateChange: true}},
	} {
		rt, _ := connectRaw(t, e.dial(), p.svc)
		if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: p.name, PluginIdx: "10"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p.name+" to join", func() bool { return e.joined("10-" + p.name) })
	}
	e.startPlugin(extRecorder{ext}, "20", "ext")

	pod := extPod(1)
	want := proto.CloneOf(pod)
	ctr := testContainer(pod, 1)
	steps := []struct {
		name string
		do   func() error
	}{
		{"RunPodSandbox", func() error { _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); return err }},
		{"UpdatePodSandbox", func() error {
			_, err := e.rt.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod})
			return err
		}},
		{"PostUpdatePodSandbox", func() error {
			return e.rt.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
		}},
		{"CreateContainer", func() error {
			_, err := e.rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
			return err
		}},
		{"PostCreateContainer", func() error {
			return e.rt.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
		}},
		{"StartContainer", func() error { return e.rt.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}) }},
		{"PostStartContainer", func() error {
			return e.rt.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
		}},
		{"UpdateContainer", func() error {
			_, err := e.rt.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr})
			return err
		}},
		{"PostUpdateContainer", func() error {
			return e.rt.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
		}},
		{"PodSandboxStatus", func() error { _, err := e.rt.PodSandboxStatus(ctx, pod, nil, true); return err }},
		{"StopContainer", func() error {
			_, err := e.rt.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
			return err
		}},
		{"RemoveContainer", func() error {
			return e.rt.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
		}},
		{"StopPodSandbox", func() error { return e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}) }},
		{"RemovePodSandbox", func() error { return e.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !proto.Equal(pod, want) {
			t.Fatalf("%s changed the caller's pod: %v", s.name, pod)
		}
	}

	for _, tc := range []struct {
		name    string
		spy     *podSpy
		methods []string // each must have been received
	}{
		{"classic", classic, append([]string{"Synchronize", "ValidateContainerAdjustment"}, stepNames(steps)...)},
		{"old", old, []string{"Synchronize", "StateChange", "UpdatePodSandbox", "CreateContainer", "UpdateContainer", "StopContainer", "PodSandboxStatus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.spy.received()
			for _, m := range tc.methods {
				if len(got[m]) == 0 {
					t.Errorf("no %s received", m)
				}
			}
			for m, pods := range got {
				for i, p := range pods {
					switch {
					case hasExtension(p):
						t.Errorf("%s #%d: pod %s carries the extension's fields", m, i, p.GetId())
					case p.GetId() == pod.GetId() && !proto.Equal(p, withoutExtension(pod)):
						t.Errorf("%s #%d: pod = %v, want the caller's without the extension's fields", m, i, p)
					}
				}
			}
		})
	}
	t.Run("extension", func(t *testing.T) {
		got := ext.received()
		for _, m := range []string{"Synchronize", "RunPodSandbox", "StartContainer", "StopPodSandbox"} {
			if len(got[m]) == 0 {
				t.Fatalf("no %s received", m)
			}
			for _, p := range got[m] {
				if p.GetId() != synced.GetId() && p.GetId() != pod.GetId() {
					continue
				}
				if !slices.EqualFunc(p.GetPortMappings(), pod.GetPortMappings(), portEqual) || !proto.Equal(p.GetDnsConfig(), pod.GetDnsConfig()) {
					t.Errorf("%s: pod %s has ports %v, dns %v; want %v, %v", m, p.GetId(), p.GetPortMappings(), p.GetDnsConfig(), pod.GetPortMappings(), pod.GetDnsConfig())
				}
			}
		}
	})
}

func portEqual(a, b *api.PortMapping) bool { return proto.Equal(a, b) }

func withoutExtension(pod *api.PodSandbox) *api.PodSandbox {
	out := proto.CloneOf(pod)
	out.PortMappings, out.DnsConfig = nil, nil
	return out
}

func stepNames(steps []struct {
	name string
	do   func() error
}) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.name)
	}
	return out
}
