// Command nrinet-demo shows the nrinet runtime library and plugin library
// working together: it starts a runtime on a temporary socket, connects two
// plugins to it over that socket, and walks one pod through its lifecycle,
// printing what each plugin saw and what the runtime got back.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// watcher prints every pod event it sees.
type watcher struct{}

func (watcher) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	fmt.Printf("  10-watcher  Synchronize: %d existing pod(s), %d container(s)\n", len(pods), len(ctrs))
	return nil, nil
}

func (watcher) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	fmt.Printf("  10-watcher  RunPodSandbox %s/%s netns=%s\n", pod.GetNamespace(), pod.GetName(), pod.NetNSPath())
	return nil
}

func (watcher) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	fmt.Printf("  10-watcher  StopPodSandbox %s/%s\n", pod.GetNamespace(), pod.GetName())
	return nil
}

func (watcher) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	fmt.Printf("  10-watcher  RemovePodSandbox %s/%s\n", pod.GetNamespace(), pod.GetName())
	return nil
}

// injector adds an environment variable and an annotation to containers.
type injector struct{}

func (injector) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	fmt.Printf("  20-injector CreateContainer %s in pod %s: adding env and annotation\n", ctr.GetName(), pod.GetName())
	return &api.ContainerAdjustment{
		Env:         []*api.KeyValue{{Key: "POD_NETWORK", Value: "nrinet"}},
		Annotations: map[string]string{"demo.nrinet.io/injected": "true"},
	}, nil, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nrinet-demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "nrinet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "nri.sock")
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	existing := &api.PodSandbox{Id: "p0", Name: "already-running", Namespace: "default"}
	rt, err := runtime.New("nrinet-demo", "v0.1.0",
		runtime.WithSocketPath(sock),
		runtime.WithPluginPath(""),
		runtime.WithLogger(logger),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
			return []*api.PodSandbox{existing}, nil, nil
		}))
	if err != nil {
		return err
	}
	if err := rt.Start(ctx); err != nil {
		return err
	}
	defer rt.Stop(ctx)
	fmt.Println("runtime listening on", sock)

	for _, p := range []struct {
		h         any
		idx, name string
	}{{watcher{}, "10", "watcher"}, {injector{}, "20", "injector"}} {
		s, err := plugin.New(p.h, plugin.WithPluginName(p.name), plugin.WithPluginIdx(p.idx),
			plugin.WithSocketPath(sock), plugin.WithLogger(logger))
		if err != nil {
			return err
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		defer s.Stop()
	}
	for deadline := time.Now().Add(5 * time.Second); len(rt.Plugins()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("plugins did not join")
		}
	}
	fmt.Print("plugins, in invocation order:")
	for _, p := range rt.Plugins() {
		fmt.Printf(" %s (%s)", p.Name, p.Events)
	}
	fmt.Println()

	pod := &api.PodSandbox{
		Id: "p1", Name: "web", Namespace: "shop", Uid: "u1",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/demo-web"}}},
	}
	ctr := &api.Container{Id: "c1", PodSandboxId: "p1", Name: "nginx", Env: []string{"PATH=/bin"}}

	fmt.Println("RunPodSandbox:")
	if _, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		return err
	}
	fmt.Println("CreateContainer:")
	rsp, err := rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		return err
	}
	fmt.Printf("  runtime got adjustment: env=%v annotations=%v\n", rsp.GetAdjust().GetEnv(), rsp.GetAdjust().GetAnnotations())
	fmt.Println("StopPodSandbox, RemovePodSandbox:")
	if err := rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
		return err
	}
	if err := rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
		return err
	}
	return nil
}
