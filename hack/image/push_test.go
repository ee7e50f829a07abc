package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// TestPush pushes nri-podnet's index, as `make image-push` does, to a
// registry (go-containerregistry's) on 127.0.0.1 and pulls it back: both
// tags name the index the archive holds, and each platform resolves to its
// image.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nrinet"
	version := "push-" + fmt.Sprint(time.Now().UnixNano())
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-version", version, "-out", out, "-push", repo, "nri-podnet"}, &stdout, &stderr); err != nil {
		t.Fatalf("image -push %s: %v\n%s", repo, err, stderr.Bytes())
	}
	p, err := imagebuild.Extract(filepath.Join(out, "nri-podnet.tar"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := imagebuild.Indexes(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := indexes[imagebuild.Ref("nri-podnet", version)].Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{version, imagebuild.LatestTag} {
		ref := repo + "/nri-podnet:" + tag
		if !strings.Contains(stdout.String(), "pushed "+ref+" "+want.String()) {
			t.Errorf("the output does not say %s was pushed as %s:\n%s", ref, want, stdout.Bytes())
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
