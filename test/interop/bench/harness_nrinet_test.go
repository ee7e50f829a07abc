//go:build !upstream

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	nriplugin "github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

type (
	PodSandbox             = api.PodSandbox
	LinuxPodSandbox        = api.LinuxPodSandbox
	Container              = api.Container
	LinuxContainer         = api.LinuxContainer
	LinuxNamespace         = api.LinuxNamespace
	Mount                  = api.Mount
	ContainerAdjustment    = api.ContainerAdjustment
	ContainerUpdate        = api.ContainerUpdate
	KeyValue               = api.KeyValue
	RunPodSandboxRequest   = api.RunPodSandboxRequest
	CreateContainerRequest = api.CreateContainerRequest
)

const ContainerState_CONTAINER_CREATED = api.ContainerState_CONTAINER_CREATED

type harness struct{ rt *runtime.Runtime }

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
	return &harness{rt}
}

// awaitSync waits until n plugins are in the dispatch list.
func (h *harness) awaitSync(n int) {
	for len(h.rt.Plugins()) != n {
		time.Sleep(20 * time.Microsecond)
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
