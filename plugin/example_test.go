package plugin_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// podLogger subscribes to pod creation only.
type podLogger struct{ log *slog.Logger }

func (p podLogger) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log.Info("pod started", "namespace", pod.GetNamespace(), "pod", pod.GetName(), "netns", pod.NetNSPath())
	return nil
}

// A plugin implements the handlers it needs; New derives the subscription.
func Example() {
	s, err := plugin.New(podLogger{log: slog.Default()},
		plugin.WithPluginName("pod-logger"),
		plugin.WithPluginIdx("50"),
		plugin.WithOnClose(func(err error) { slog.Info("runtime connection ended", "reason", err) }),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name())
	// In a real plugin: err = s.Run(ctx)

	// Output: 50-pod-logger
}

// A plugin started by hand, rather than launched by the runtime, can
// outlive the runtime: with WithReconnect, Run keeps connecting again
// whenever the runtime goes away, until ctx is cancelled.
func ExampleWithReconnect() {
	s, err := plugin.New(podLogger{log: slog.Default()},
		plugin.WithPluginName("pod-logger"),
		plugin.WithPluginIdx("50"),
		plugin.WithSocketPath("/var/run/nri/nri.sock"),
		plugin.WithReconnect(0, 0), // DefaultReconnectInitial, DefaultReconnectMax
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name())
	// In a real plugin:
	//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	//	defer stop()
	//	err = s.Run(ctx) // nil once ctx is cancelled

	// Output: 50-pod-logger
}

// netLogger only observes pods as they start (docs/writing-plugins.md's second example).
type netLogger struct{}

func (netLogger) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	fmt.Println("pod started:", pod.GetNamespace()+"/"+pod.GetName())
	return nil
}

// runNetLogger serves the runtime on socket until ctx ends.
func runNetLogger(ctx context.Context, socket string) error {
	s, err := plugin.New(netLogger{}, plugin.WithPluginName("net-logger"), plugin.WithPluginIdx("50"),
		plugin.WithSocketPath(socket))
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// syncObserver closes synced once the runtime synchronized a plugin.
type syncObserver struct {
	runtime.Observer
	once   sync.Once
	synced chan struct{}
}

func (o *syncObserver) PluginCall(plugin, method string, took time.Duration, err error) {
	if method == "Synchronize" {
		o.once.Do(func() { close(o.synced) })
	}
}

// Run connects the plugin to the runtime's socket and serves the runtime
// until ctx is cancelled (or the runtime shuts it down). Here the runtime
// is nrinet's runtime library on a socket in a temporary directory.
func ExampleStub_Run() {
	dir, _ := os.MkdirTemp("", "nri-example-")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "nri.sock")
	obs := &syncObserver{synced: make(chan struct{})}
	rt, err := runtime.New("example-runtime", "v0.1.0", runtime.WithSocketPath(sock),
		runtime.WithPluginPath(filepath.Join(dir, "plugins")), runtime.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(ctx)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runNetLogger(runCtx, sock) }()

	<-obs.synced       // the plugin is joining
	rt.AwaitJoins(ctx) // and has joined
	rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: &api.PodSandbox{Id: "p1", Namespace: "default", Name: "web"}})
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// pod started: default/web
	// Run: <nil>
}

// podNet is a network plugin: it gives each pod its part of the network
// and answers PodSandboxStatus from what it gave (docs/writing-plugins.md's first example).
type podNet struct {
	mu   sync.Mutex
	nets map[string]*api.PodSandboxNetwork // by pod ID
}

func (p *podNet) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	// create eth0 in pod.NetNSPath() and allocate its address here ...
	n := &api.PodSandboxNetwork{
		Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24"}}},
		Routes:     []*api.NetworkRoute{{Destination: "0.0.0.0/0", Gateway: "198.18.0.1"}},
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nets[pod.GetId()] = n
	return n, nil
}

func (p *podNet) PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, verbose bool) (*api.PodSandboxNetwork, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nets[pod.GetId()], nil
}

// A network plugin whose networks would be dropped by a runtime without
// the pod network extension (containerd, CRI-O) refuses such a runtime:
// Start and Run fail with an error matching ErrNoNetworkExtension, even
// with WithReconnect, and the plugin never joins.
func ExampleWithRequiredNetworkExtension() {
	s, err := plugin.New(&podNet{nets: map[string]*api.PodSandboxNetwork{}},
		plugin.WithPluginName("my-net"),
		plugin.WithPluginIdx("10"),
		plugin.WithReconnect(0, 0),
		plugin.WithRequiredNetworkExtension(),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name())
	// In a real plugin:
	//	if err := s.Run(ctx); errors.Is(err, plugin.ErrNoNetworkExtension) {
	//		fmt.Fprintln(os.Stderr, err) // names the runtime and what to do
	//		os.Exit(3)
	//	}

	// Output: 10-my-net
}
