package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/nri/internal/apisurface"
)

// TestGeneratedIsCurrent checks that pkg/api/aliases_generated.go is what
// apigen writes today; after changing nrinet's api or pkg/api's
// hand-written files, run go generate ./pkg/api.
func TestGeneratedIsCurrent(t *testing.T) {
	if apisurface.UpstreamDir("pkg/api") == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	dir := filepath.Join("..", "..", "pkg", "api")
	want, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, generatedFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("pkg/api/%s is stale: run go generate ./pkg/api", generatedFile)
	}
}
