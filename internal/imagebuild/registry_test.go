package imagebuild_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// TestRegistryServesItsImages pushes a pause image to a Registry and pulls
// it back by name: the same digest, one manifest request counted; after
// Close nothing answers.
func TestRegistryServesItsImages(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.Pause(bin, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	r, err := imagebuild.StartRegistry(t.Context(), map[string]v1.Image{"e2e/pause:1": img})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.Addr()+"/e2e/pause:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if r.ManifestRequests() != 0 {
		t.Errorf("ManifestRequests() = %d after the pushes, want 0", r.ManifestRequests())
	}
	got, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	if d, err := got.Digest(); err != nil || d != want {
		t.Errorf("pulled digest %v (%v), want %v", d, err, want)
	}
	if n := r.ManifestRequests(); n < 1 {
		t.Errorf("ManifestRequests() = %d after a pull, want at least 1", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Image(ref, remote.WithContext(t.Context())); err == nil {
		t.Error("the registry still answers after Close")
	}
}
