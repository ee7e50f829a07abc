package cri_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/runtime"
)

// The store is both the runtime library's pod network store and the
// source of the pods joining plugins synchronize with.
func Example() {
	dir, _ := os.MkdirTemp("", "nrinetd-example-")
	defer os.RemoveAll(dir)
	store, err := cri.OpenStore(filepath.Join(dir, "sandboxes.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	rt, err := runtime.New(cri.RuntimeName, "0.1.0",
		runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""),
		runtime.WithPodNetworkStore(store),
		runtime.WithSyncFunc(store.SyncPods))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := cri.New(rt, store, cri.WithStateDir(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := srv.Version(context.Background(), &criapi.VersionRequest{})
	fmt.Println(v.GetRuntimeName(), v.GetVersion(), v.GetRuntimeApiVersion())
	// Output: nrinetd 0.1.0 v1
}

// Serve returns ErrClosed once Shutdown has let the requests in flight
// finish.
func ExampleServer_Shutdown() {
	dir, _ := os.MkdirTemp("", "nrinetd-example-")
	defer os.RemoveAll(dir)
	store, _ := cri.OpenStore(filepath.Join(dir, "sandboxes.db"))
	defer store.Close()
	rt, _ := runtime.New(cri.RuntimeName, "0.1.0", runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""))
	srv, _ := cri.New(rt, store)
	l, err := net.Listen("unix", filepath.Join(dir, "cri.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), l) }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx))
	fmt.Println(errors.Is(<-served, cri.ErrClosed))
	// Output:
	// <nil>
	// true
}
