package containerde2e

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// registry is an image registry on a loopback port: go-containerregistry's
// (pkg/registry, in memory), holding images built by the test, pushed to
// it with remote.Write, so that containerd can pull without a network.
// critest pulls its test image even when it is there (PullImage in its
// specs' BeforeEach).
type registry struct {
	addr string // host:port
	srv  *http.Server
	done chan struct{}
	// pulls counts the manifest requests answered.
	pulls atomic.Int64
}

// startRegistry serves the images, named "repo:tag" (without a registry
// host), on 127.0.0.1; t's cleanup stops it.
func startRegistry(t testing.TB, images map[string]v1.Image) *registry {
	t.Helper()
	r := &registry{done: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/manifests/") && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
			r.pulls.Add(1)
		}
		inner.ServeHTTP(w, req)
	})}
	go func() {
		defer close(r.done)
		r.srv.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
		<-r.done
	})
	for ref, img := range images {
		tag, err := name.NewTag(r.addr+"/"+ref, name.StrictValidation)
		if err != nil {
			t.Fatalf("registry: %s: %v", ref, err)
		}
		if err := remote.Write(tag, img, remote.WithContext(t.Context())); err != nil {
			t.Fatalf("registry: pushing %s: %v", ref, err)
		}
	}
	r.pulls.Store(0) // the pushes' own manifest checks
	return r
}

// manifestRequests returns how many manifest requests it answered.
func (r *registry) manifestRequests() int {
	return int(r.pulls.Load())
}

// writeHosts writes containerd's registry host configuration (the CRI
// image service's config_path) into dir: each registry host of hosts is
// served by this registry, over plain HTTP, and by nothing else.
func (r *registry) writeHosts(t testing.TB, dir string, hosts ...string) {
	t.Helper()
	for _, h := range hosts {
		d := filepath.Join(dir, h)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		conf := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+r.addr, "http://"+r.addr)
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
