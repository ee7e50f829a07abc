//go:build !upstream

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	nriplugin "github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

type (
	PodSandbox               = api.PodSandbox
	LinuxPodSandbox          = api.LinuxPodSandbox
	Container                = api.Container
	LinuxContainer           = api.LinuxContainer
	LinuxNamespace           = api.LinuxNamespace
	Mount                    = api.Mount
	ContainerAdjustment      = api.ContainerAdjustment
	ContainerUpdate          = api.ContainerUpdate
	KeyValue                 = api.KeyValue
	LinuxContainerAdjustment = api.LinuxContainerAdjustment
	LinuxResources           = api.LinuxResources
	LinuxMemory              = api.LinuxMemory
	LinuxCPU                 = api.LinuxCPU
	OptionalInt64            = api.OptionalInt64
	OptionalUInt64           = api.OptionalUInt64
	RunPodSandboxRequest     = api.RunPodSandboxRequest
	CreateContainerRequest   = api.CreateContainerRequest
)

const ContainerState_CONTAINER_CREATED = api.ContainerState_CONTAINER_CREATED

type harness struct {
	b  *testing.B
	rt *runtime.Runtime
}

func newHarness(b *testing.B, sock string, pods []*PodSandbox, ctrs []*Container) *harness {
	rt, err := runtime.New("bench", "v0", runtime.WithSocketPath(sock), runtime.WithPluginPath(""),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return pods, ctrs, nil }))
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rt.Stop(ctx)
	})
	return &harness{b, rt}
}

// awaitSync waits until n plugins are in the dispatch list, looking
// every 20 µs: the join benchmark times it.
func (h *harness) awaitSync(n int) {
	err := testutil.Poll(10*time.Second, 20*time.Microsecond,
		testutil.Until(fmt.Sprintf("%d plugins in the dispatch list", n), func() bool { return len(h.rt.Plugins()) == n }))
	if err != nil {
		h.b.Fatal(err)
	}
}

func (h *harness) runPodSandbox(ctx context.Context, req *RunPodSandboxRequest) error {
	_, err := h.rt.RunPodSandbox(ctx, req)
	return err
}

func (h *harness) createContainer(ctx context.Context, req *CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return h.rt.CreateContainer(ctx, req)
}

func newStub(handler any, sock, idx string) (*nriplugin.Stub, error) {
	return nriplugin.New(handler, nriplugin.WithPluginName("bench"), nriplugin.WithPluginIdx(idx),
		nriplugin.WithSocketPath(sock), nriplugin.WithEnv(func(string) string { return "" }, "bench"))
}

// startPlugin starts an in-process plugin and returns its stop function.
func startPlugin(b *testing.B, handler any, sock, idx string) func() {
	s, err := newStub(handler, sock, idx)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s.Stop
}

// runPlugin serves as a plugin until the connection ends.
func runPlugin(ctx context.Context, handler any, sock, idx string) error {
	s, err := newStub(handler, sock, idx)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// statusPlugin answers PodSandboxStatus with its part of the pod network:
// plugin 10 the IPv4 address, 11 the IPv6 address, 12 an info entry, as
// a network plugin, a second-family IPAM and an observer might.
type statusPlugin struct {
	runPodOnly
	net *api.PodSandboxNetwork
}

func (s statusPlugin) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*api.PodSandboxNetwork, error) {
	return s.net, nil
}

func statusHandler(p *plugin) any {
	var n *api.PodSandboxNetwork
	switch p.name {
	case "p10":
		n = &api.PodSandboxNetwork{Ips: []string{"198.18.0.17"}}
	case "p11":
		n = &api.PodSandboxNetwork{Ips: []string{"fd00:198:18::17"}}
	default:
		n = &api.PodSandboxNetwork{Info: map[string]string{"bench.nrinet.io/" + p.name: "ok"}}
	}
	return statusPlugin{runPodOnly{p}, n}
}

// podSandboxStatus runs one status round; verbose skips the cache.
func (h *harness) podSandboxStatus(ctx context.Context, pod *PodSandbox, verbose bool) error {
	rec, err := h.rt.PodSandboxStatus(ctx, pod, nil, verbose)
	if err == nil && (len(rec.GetNetwork().GetIps()) != 2 || len(rec.GetNetwork().GetInfo()) != 1) {
		err = fmt.Errorf("status is %v, want two addresses and an info entry from 3 plugins", rec.GetNetwork())
	}
	if err == nil && len(rec.GetStale()) > 0 {
		err = fmt.Errorf("stale plugins: %v", rec.GetStale())
	}
	return err
}
