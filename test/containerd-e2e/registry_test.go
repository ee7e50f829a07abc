package containerde2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// registry is the suite's image registry on a loopback port
// (imagebuild.Registry), holding images built by the test, so that
// containerd can pull without a network. critest pulls its test image even
// when it is there (PullImage in its specs' BeforeEach).
type registry struct {
	*imagebuild.Registry
	addr string // host:port
}

// startRegistry serves the images, named "repo:tag" (without a registry
// host), on 127.0.0.1; t's cleanup stops it.
func startRegistry(t testing.TB, images map[string]v1.Image) *registry {
	t.Helper()
	r, err := imagebuild.StartRegistry(t.Context(), images)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &registry{Registry: r, addr: r.Addr()}
}

// manifestRequests returns how many manifest requests it answered.
func (r *registry) manifestRequests() int {
	return r.ManifestRequests()
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
