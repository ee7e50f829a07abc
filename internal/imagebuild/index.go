package imagebuild

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index returns the OCI image index of images, one per platform, each
// listed with the platform (OS, architecture, variant) its configuration
// names: a runtime pulling the index picks the image of its node. Two
// images of one platform are an error.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	if len(images) == 0 {
		return nil, fmt.Errorf("imagebuild: an index of no image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("imagebuild: %w", err)
		}
		platform := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		if seen[platform.String()] {
			return nil, fmt.Errorf("imagebuild: two images for platform %s", platform.String())
		}
		seen[platform.String()] = true
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	return idx, nil
}

// Push pushes idx to each of refs (tagged references, host[:port]/path:tag)
// with go-containerregistry: the blobs and manifests once, then each tag.
// Credentials come from the Docker configuration
// (authn.DefaultKeychain, ~/.docker/config.json). The transport is
// go-containerregistry's: a registry on localhost:PORT, a *.localhost
// name, 127.0.0.1, [::1] or a private IPv4 address is tried over TLS and
// then in plain HTTP, any other only over TLS.
func Push(ctx context.Context, idx v1.ImageIndex, refs ...string) error {
	if len(refs) == 0 {
		return fmt.Errorf("imagebuild: push: no image reference")
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	for i, r := range refs {
		tag, err := name.NewTag(r, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("imagebuild: image reference %q: %w", r, err)
		}
		if i == 0 {
			err = remote.WriteIndex(tag, idx, opts...)
		} else {
			err = remote.Tag(tag, idx, opts...)
		}
		if err != nil {
			return fmt.Errorf("imagebuild: pushing %s: %w", r, err)
		}
	}
	return nil
}
