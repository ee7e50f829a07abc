package containerde2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// registry is a read-only image registry on a loopback port: the pull
// side of the OCI distribution API (GET and HEAD of /v2/, of a manifest
// by tag or digest, and of a blob by digest) over images built by the
// test, so that containerd can pull without a network. critest pulls its
// test image even when it is there (PullImage in its specs' BeforeEach).
type registry struct {
	addr string // host:port
	srv  *http.Server
	done chan struct{}

	mu        sync.Mutex
	manifests map[string]blob // "repo:tag" and "repo@digest"
	blobs     map[string]blob // by digest
	pulls     int             // manifest requests answered
}

// blob is a manifest or a blob with its media type.
type blob struct {
	mediaType string
	data      []byte
}

// startRegistry serves the images, named "repo:tag" (without a registry
// host), on 127.0.0.1; t's cleanup stops it.
func startRegistry(t testing.TB, images map[string]v1.Image) *registry {
	t.Helper()
	r := &registry{manifests: map[string]blob{}, blobs: map[string]blob{}, done: make(chan struct{})}
	for name, img := range images {
		if err := r.add(name, img); err != nil {
			t.Fatalf("registry: %s: %v", name, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
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
	return r
}

// add makes img available as name ("repo:tag") and by digest.
func (r *registry) add(name string, img v1.Image) error {
	repo, tag, ok := strings.Cut(name, ":")
	if !ok {
		return errors.New("want repo:tag")
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	m := blob{mediaType: string(mt), data: raw}
	r.manifests[repo+":"+tag] = m
	r.manifests[repo+"@"+d.String()] = m
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	r.blobs[cfgName.String()] = blob{mediaType: "application/octet-stream", data: cfg}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		ld, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		rc.Close()
		if err != nil {
			return err
		}
		r.blobs[ld.String()] = blob{mediaType: "application/octet-stream", data: b.Bytes()}
	}
	return nil
}

// ServeHTTP answers /v2/, /v2/<repo>/manifests/<ref> and
// /v2/<repo>/blobs/<digest>, GET and HEAD only.
func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(req.URL.Path, "/v2/")
	if p == "" || p == req.URL.Path {
		if req.URL.Path == "/v2/" || req.URL.Path == "/v2" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, req)
		return
	}
	var (
		b     blob
		found bool
	)
	r.mu.Lock()
	if i := strings.LastIndex(p, "/manifests/"); i > 0 {
		repo, ref := p[:i], p[i+len("/manifests/"):]
		sep := ":"
		if strings.HasPrefix(ref, "sha256:") {
			sep = "@"
		}
		b, found = r.manifests[repo+sep+ref]
		r.pulls++
	} else if i := strings.LastIndex(p, "/blobs/"); i > 0 {
		b, found = r.blobs[p[i+len("/blobs/"):]]
	}
	r.mu.Unlock()
	if !found {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not here"}]}`)
		return
	}
	w.Header().Set("Content-Type", b.mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b.data)))
	w.Header().Set("Docker-Content-Digest", v1.Hash{Algorithm: "sha256", Hex: sha256Hex(b.data)}.String())
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		w.Write(b.data)
	}
}

// manifestRequests returns how many manifest requests it answered.
func (r *registry) manifestRequests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulls
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

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
