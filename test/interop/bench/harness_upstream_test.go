//go:build upstream

package bench

import (
	"context"
	"testing"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
	"github.com/sirupsen/logrus"
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

func init() {
	// Keep upstream's informational logging out of the benchmark output.
	logrus.SetLevel(logrus.WarnLevel)
	_ = log.Get()
}

type harness struct{ a *nri.Adaptation }

func newHarness(b *testing.B, sock string, pods []*PodSandbox, ctrs []*Container) *harness {
	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		_, err := cb(ctx, pods, ctrs)
		return err
	}
	updateFn := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }
	a, err := nri.New("bench", "v0", syncFn, updateFn, nri.WithSocketPath(sock), nri.WithPluginPath(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Stop)
	return &harness{a}
}

// awaitSync waits until a plugin whose Synchronize was called is in the
// dispatch list (upstream holds this lock while synchronizing).
func (h *harness) awaitSync(int) { h.a.BlockPluginSync().Unblock() }

func (h *harness) runPodSandbox(ctx context.Context, req *RunPodSandboxRequest) error {
	return h.a.RunPodSandbox(ctx, req)
}

func (h *harness) createContainer(ctx context.Context, req *CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return h.a.CreateContainer(ctx, req)
}

func newStub(handler any, sock, idx string) (stub.Stub, error) {
	return stub.New(handler, stub.WithPluginName("bench"), stub.WithPluginIdx(idx),
		stub.WithSocketPath(sock), stub.WithOnClose(func() {}))
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

// statusHandler: upstream NRI has no PodSandboxStatus.
func statusHandler(*plugin) any { return nil }

func (h *harness) podSandboxStatus(context.Context, *PodSandbox, bool) error { return nil }
