package plugin_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// withoutNetworkExtension makes nrinet's runtime behave, towards plugins,
// like a runtime that does not support the pod network extension
// (containerd, CRI-O, containerd/nri v0.12.5): a ttrpc interceptor on its
// client re-encodes every Configure request it sends without
// network_extension, the one field by which a plugin learns of the
// extension. Everything else is the runtime's own doing.
func withoutNetworkExtension() runtime.Option {
	return runtime.WithTTRPCOptions([]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(
		func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, call ttrpc.Invoker) error {
			if info.FullMethod == "/"+api.PluginServiceName+"/Configure" {
				cfg := &api.ConfigureRequest{}
				if err := cfg.UnmarshalVT(req.Payload); err != nil {
					return err
				}
				cfg.NetworkExtension = nil
				b, err := cfg.MarshalVT()
				if err != nil {
					return err
				}
				req.Payload = b
			}
			return call(ctx, req, rsp)
		})}, nil)
}

// netCounter is a network plugin that counts the calls it gets and
// returns one address for every pod.
type netCounter struct {
	configured, synced, ran atomic.Int32
}

func (n *netCounter) Configure(context.Context, string, string, string) (api.EventMask, error) {
	n.configured.Add(1)
	return 0, nil
}

func (n *netCounter) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	n.synced.Add(1)
	return nil, nil
}

func (n *netCounter) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	n.ran.Add(1)
	return &api.PodSandboxNetwork{Ips: []string{"198.18.0.5"}}, nil
}

// netnsPod is a pod that is not host-network (the runtime does not look
// at the namespace's path).
func netnsPod(id string) *api.PodSandbox {
	return &api.PodSandbox{
		Id: id, Name: id, Namespace: "default", Uid: id + "-uid",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/" + id}}},
	}
}

// TestWithRequiredNetworkExtension runs a network plugin against nrinet's
// runtime advertising the pod network extension or not, with and without
// WithRequiredNetworkExtension. Refusing, Start returns one
// NoNetworkExtensionError naming the plugin and the runtime, the plugin's
// Configure handler is not called, the runtime never lists the plugin, and
// a pod run afterwards reaches no handler. Otherwise the plugin joins,
// and its network reaches the runtime only if the extension is
// advertised.
func TestWithRequiredNetworkExtension(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertised bool
		required   bool
		refused    bool
	}{
		{name: "advertised, required", advertised: true, required: true},
		{name: "not advertised, required", required: true, refused: true},
		{name: "advertised, not required", advertised: true},
		{name: "not advertised, not required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := socketPath(t)
			var rtOpts []runtime.Option
			if !tc.advertised {
				rtOpts = append(rtOpts, withoutNetworkExtension())
			}
			rt, _ := startRuntime(t, sock, rtOpts...)
			var opts []plugin.Option
			if tc.required {
				opts = append(opts, plugin.WithRequiredNetworkExtension())
			}
			closed := make(chan error, 1)
			opts = append(opts, plugin.WithOnClose(func(err error) { closed <- err }))
			h := &netCounter{}
			s := newStub(t, h, sock, opts...)
			err := s.Start(context.Background())
			t.Cleanup(s.Stop)

			if tc.refused {
				var refused *plugin.NoNetworkExtensionError
				if !errors.As(err, &refused) || !errors.Is(err, plugin.ErrNoNetworkExtension) {
					t.Fatalf("Start = %v, want a *NoNetworkExtensionError matching ErrNoNetworkExtension", err)
				}
				want := plugin.NoNetworkExtensionError{Plugin: "10-test", Runtime: "plugin-test-runtime", RuntimeVersion: "v0"}
				if *refused != want {
					t.Errorf("refusal = %+v, want %+v", *refused, want)
				}
				const text = `plugin "10-test" refuses to join runtime "plugin-test-runtime" version "v0": ` +
					`it needs nrinet's pod network extension, which the runtime does not advertise in Configure, ` +
					`so the pod networks the plugin sets up would be dropped; ` +
					`run it with a runtime built on nrinet (nrinetd, or containerd on nrinet with network_mode = "nri"), and on this runtime keep using CNI`
				if err.Error() != text {
					t.Errorf("Start's error says\n%s\nwant\n%s", err, text)
				}
				if cerr := receive(t, closed, "the on-close callback"); !errors.Is(cerr, plugin.ErrNoNetworkExtension) {
					t.Errorf("on-close callback got %v, want the refusal", cerr)
				}
				if _, ok := s.Runtime(); ok {
					t.Error("Runtime() reports a configured runtime after the refusal")
				}
			} else if err != nil {
				t.Fatalf("Start = %v", err)
			}

			if tc.refused {
				if joined(rt, s.Name()) {
					t.Errorf("the runtime lists %s after it refused", s.Name())
				}
			} else {
				testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })
			}
			rec, err := rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netnsPod("pod-1")})
			if err != nil {
				t.Fatalf("RunPodSandbox: %v", err)
			}
			wantRuns, wantIPs := int32(1), []string(nil)
			if tc.refused {
				wantRuns = 0
			}
			if tc.advertised {
				wantIPs = []string{"198.18.0.5"}
			}
			if got := h.ran.Load(); got != wantRuns {
				t.Errorf("RunPodSandboxNetwork called %d times, want %d", got, wantRuns)
			}
			if got := rec.GetNetwork().GetIps(); strings.Join(got, ",") != strings.Join(wantIPs, ",") {
				t.Errorf("the runtime recorded the pod's IPs %v, want %v", got, wantIPs)
			}
			if tc.refused && (h.configured.Load() != 0 || h.synced.Load() != 0) {
				t.Errorf("the refusing plugin's Configure ran %d times, Synchronize %d times; want neither",
					h.configured.Load(), h.synced.Load())
			}
		})
	}
}

// TestRun_RefusalIsFinal: a refusal for a missing pod network extension
// ends Run, with or without WithReconnect, after one connection attempt
// and with the refusal as its result; WithReconnect does not try again.
func TestRun_RefusalIsFinal(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []plugin.Option
	}{
		{name: "without WithReconnect"},
		{name: "with WithReconnect", opts: []plugin.Option{plugin.WithReconnect(time.Millisecond, time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := socketPath(t)
			rt, _ := startRuntime(t, sock, withoutNetworkExtension())
			d := newDialCounter()
			h := &netCounter{}
			s := newStub(t, h, sock, append(tc.opts, plugin.WithRequiredNetworkExtension(), plugin.WithDialer(d.dial))...)
			err := receive(t, run(t, s, context.Background()), "Run to return")
			if refused := (*plugin.NoNetworkExtensionError)(nil); !errors.As(err, &refused) {
				t.Fatalf("Run = %v, want the refusal", err)
			}
			if n := len(d.attempts); n != 1 {
				t.Errorf("Run connected %d times, want once", n)
			}
			if joined(rt, s.Name()) || h.configured.Load() != 0 {
				t.Errorf("the plugin joined (listed: %v) or was configured (%d times)", joined(rt, s.Name()), h.configured.Load())
			}
		})
	}
}

// classicProbe is a plugin without network handlers that records what the
// runtime offered and the port mappings of the pods it gets.
type classicProbe struct {
	offered chan uint32
	ports   chan int
}

func (p *classicProbe) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	info, _ := plugin.RuntimeInfoFromContext(ctx)
	p.offered <- info.NetworkExtension
	return 0, nil
}

func (p *classicProbe) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.ports <- len(pod.GetPortMappings())
	return nil
}

// TestWithoutNetworkExtension: New refuses the option with
// WithRequiredNetworkExtension and for a network handler. Against a
// runtime that offers the extension, a plugin built with it answers as an
// upstream plugin: its Configure handler sees no extension, and its pods
// come without the extension's port mappings; without the option, the
// same plugin gets them.
func TestWithoutNetworkExtension(t *testing.T) {
	sock := socketPath(t)
	if _, err := plugin.New(&classicProbe{}, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"), plugin.WithSocketPath(sock),
		plugin.WithoutNetworkExtension(), plugin.WithRequiredNetworkExtension()); err == nil {
		t.Error("New with WithoutNetworkExtension and WithRequiredNetworkExtension succeeded")
	}
	if _, err := plugin.New(&netCounter{}, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"), plugin.WithSocketPath(sock),
		plugin.WithoutNetworkExtension()); err == nil || !strings.Contains(err.Error(), "network handler") {
		t.Errorf("New of a network handler with WithoutNetworkExtension = %v, want refused, naming the handler", err)
	}

	rt, _ := startRuntime(t, sock)
	pod := netnsPod("pod-1")
	pod.PortMappings = []*api.PortMapping{{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 80, HostPort: 8080}}
	for _, tc := range []struct {
		name        string
		opts        []plugin.Option
		wantOffered bool
	}{
		{name: "declined", opts: []plugin.Option{plugin.WithoutNetworkExtension()}},
		{name: "taken", wantOffered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &classicProbe{offered: make(chan uint32, 1), ports: make(chan int, 1)}
			s, err := plugin.New(h, append([]plugin.Option{plugin.WithPluginName(tc.name), plugin.WithPluginIdx("10"),
				plugin.WithSocketPath(sock)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			if offered := receive(t, h.offered, "Configure"); (offered != 0) != tc.wantOffered {
				t.Errorf("the Configure handler saw extension version %d, want offered: %v", offered, tc.wantOffered)
			}
			testutil.WaitFor(t, "the plugin to join", patience, func() bool { return joined(rt, s.Name()) })
			if _, err := rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			want := 0
			if tc.wantOffered {
				want = 1
			}
			if got := receive(t, h.ports, "RunPodSandbox"); got != want {
				t.Errorf("the plugin's pod has %d port mappings, want %d", got, want)
			}
			s.Stop()
			testutil.WaitFor(t, "the plugin to leave", patience, func() bool { return !joined(rt, s.Name()) })
		})
	}
}
