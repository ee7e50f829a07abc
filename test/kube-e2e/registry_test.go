package kubee2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// imageRegistry is the suite's image registry: go-containerregistry's
// registry, in memory, which `make image-push` (hack/image -push) pushes
// nri-podnet's image index to and the nodes' containerd pulls it from, as
// a cluster's nodes pull from the operator's registry. It listens on
// 127.0.0.1:<port> of the host, where the suite pushes, and on the same
// address in each node's network namespace (serveIn), so that one image
// reference, 127.0.0.1:<port>/nrinet/nri-podnet:<tag>, works everywhere.
// Plain HTTP: containerd and go-containerregistry speak it to 127.0.0.1.
type imageRegistry struct {
	srv  *http.Server
	port int
	// wg counts the Serve calls, one per listener.
	wg sync.WaitGroup
}

// startImageRegistry starts the registry on 127.0.0.1 of the host, on a
// port the kernel picks.
func startImageRegistry() (*imageRegistry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("image registry: %w", err)
	}
	r := &imageRegistry{
		srv:  &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second},
		port: l.Addr().(*net.TCPAddr).Port,
	}
	r.serve(l)
	return r, nil
}

// serve serves the registry on l until l is closed or the registry stops.
func (r *imageRegistry) serve(l net.Listener) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.srv.Serve(l)
	}()
}

// repository is the repository hack/image -push pushes to and the
// DaemonSet's image is taken from: 127.0.0.1:<port>/nrinet.
func (r *imageRegistry) repository() string {
	return "127.0.0.1:" + strconv.Itoa(r.port) + "/nrinet"
}

// serveIn serves the registry on 127.0.0.1:<port> in the network
// namespace at netnsPath too, until the test ends.
func (r *imageRegistry) serveIn(t testing.TB, netnsPath string) {
	t.Helper()
	var l net.Listener
	err := inNetNS(netnsPath, func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(r.port))
		return err
	})
	if err != nil {
		t.Fatalf("image registry in %s: %v", netnsPath, err)
	}
	r.serve(l)
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("image registry in %s: %v", netnsPath, err)
		}
	})
}

// stop stops the registry: every listener closed, every Serve returned.
func (r *imageRegistry) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		r.srv.Close()
	}
	r.wg.Wait()
}
