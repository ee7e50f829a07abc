package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// A runtime embeds a Runtime, starts it, and calls it at each lifecycle
// step of its pods and containers.
func Example() {
	dir, _ := os.MkdirTemp("", "nri-example-")
	defer os.RemoveAll(dir)

	r, err := runtime.New("example-runtime", "v0.1.0",
		runtime.WithSocketPath(filepath.Join(dir, "nri.sock")),
		runtime.WithPluginPath(filepath.Join(dir, "plugins")),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
			return nil, nil, nil // the pods and containers that exist now
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer r.Stop(ctx)

	_, err = r.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: &api.PodSandbox{Id: "p1", Name: "web"}})
	fmt.Println("RunPodSandbox:", err, "plugins:", len(r.Plugins()))
	// Output: RunPodSandbox: <nil> plugins: 0
}
