package main

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// startRegistry starts go-containerregistry's registry on 127.0.0.1 for
// the test and returns the repository to push to.
func startRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/nrinet"
}

// checkPushed checks what `make image-push` pushed to repo: for each
// component, both tags name the index the archive in out holds, and each
// platform resolves to its image.
func checkPushed(t *testing.T, out, stdout, repo, version string) {
	for _, c := range components {
		p, err := imagebuild.Extract(filepath.Join(out, c+".tar"), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		indexes, err := imagebuild.Indexes(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := indexes[imagebuild.Ref(c, version)].Digest()
		if err != nil {
			t.Fatal(err)
		}
		for _, tag := range []string{version, imagebuild.LatestTag} {
			ref := repo + "/" + c + ":" + tag
			if !strings.Contains(stdout, "pushed "+ref+" "+want.String()) {
				t.Errorf("the output does not say %s was pushed as %s:\n%s", ref, want, stdout)
			}
			r, err := name.NewTag(ref)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(r, remote.WithContext(t.Context()))
			if err != nil {
				t.Fatalf("pulling %s: %v", ref, err)
			}
			if desc.Digest != want || !desc.MediaType.IsIndex() {
				t.Errorf("%s is %s %s, want the index %s", ref, desc.MediaType, desc.Digest, want)
			}
			for _, arch := range []string{"amd64", "arm64"} {
				img, err := remote.Image(r, remote.WithContext(t.Context()), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
				if err != nil {
					t.Fatalf("pulling %s for linux/%s: %v", ref, arch, err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Architecture != arch {
					t.Errorf("%s for linux/%s has architecture %s", ref, arch, cf.Architecture)
				}
			}
		}
	}
}
