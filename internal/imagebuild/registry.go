package imagebuild

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an image registry on a loopback port:
// go-containerregistry's (pkg/registry, in memory), holding the images it
// was started with, so that a runtime can pull without a network. Tests
// use it for runtimes that can only pull (CRI has no image import).
type Registry struct {
	addr string
	srv  *http.Server
	done chan struct{}
	// pulls counts the manifest requests answered.
	pulls atomic.Int64
}

// StartRegistry serves images, named "repo:tag" (without a registry
// host), on 127.0.0.1 until Close.
func StartRegistry(ctx context.Context, images map[string]v1.Image) (*Registry, error) {
	r := &Registry{done: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
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
	for ref, img := range images {
		tag, err := name.NewTag(r.addr+"/"+ref, name.StrictValidation)
		if err == nil {
			err = remote.Write(tag, img, remote.WithContext(ctx))
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("registry: pushing %s: %w", ref, err)
		}
	}
	r.pulls.Store(0) // the pushes' own manifest checks
	return r, nil
}

// Addr is the registry's host:port.
func (r *Registry) Addr() string { return r.addr }

// ManifestRequests returns how many manifest requests it answered since
// it started.
func (r *Registry) ManifestRequests() int { return int(r.pulls.Load()) }

// Close stops the registry at once, closing its connections (a client
// that left a response unread must not hold it up), and waits for its
// server to return.
func (r *Registry) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}
