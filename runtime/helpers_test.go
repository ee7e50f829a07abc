package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
