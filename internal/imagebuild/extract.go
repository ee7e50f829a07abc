package imagebuild

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Extract unpacks the OCI image archive at archive (as Write writes it)
// into the existing directory dir and returns the layout, for reading the
// images back with go-containerregistry. Only directories and regular
// files with clean relative names are accepted.
func Extract(archive, dir string) (layout.Path, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("imagebuild: reading %s: %w", archive, err)
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return "", fmt.Errorf("imagebuild: %s: entry %q is outside the archive", archive, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr)
		default:
			err = fmt.Errorf("entry %q is of type %q, not a file or directory", h.Name, h.Typeflag)
		}
		if err != nil {
			return "", fmt.Errorf("imagebuild: reading %s: %w", archive, err)
		}
	}
	return layout.FromPath(dir)
}

func writeFile(name string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Images returns the images the index of p names, by the reference in
// their io.containerd.image.name annotation (the one `ctr images import`
// uses). An index entry without one is an error.
func Images(p layout.Path) (map[string]v1.Image, error) {
	return named(p, func(idx v1.ImageIndex, d v1.Descriptor, _ string) (v1.Image, error) {
		return idx.Image(d.Digest)
	})
}

// Indexes returns the image indexes the index of p names (as WriteIndex
// writes them), by the reference in their io.containerd.image.name
// annotation. An entry without one, or one that is not an index, is an
// error.
func Indexes(p layout.Path) (map[string]v1.ImageIndex, error) {
	return named(p, func(idx v1.ImageIndex, d v1.Descriptor, ref string) (v1.ImageIndex, error) {
		if !d.MediaType.IsIndex() {
			return nil, fmt.Errorf("%s is a %s, not an image index", ref, d.MediaType)
		}
		return idx.ImageIndex(d.Digest)
	})
}

// named reads each entry of p's index with get, by the reference in its
// io.containerd.image.name annotation.
func named[T any](p layout.Path, get func(v1.ImageIndex, v1.Descriptor, string) (T, error)) (map[string]T, error) {
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	out := make(map[string]T, len(m.Manifests))
	for _, d := range m.Manifests {
		ref := d.Annotations[containerdNameAnnotation]
		if ref == "" {
			return nil, fmt.Errorf("imagebuild: %s: manifest %s has no %s annotation", p, d.Digest, containerdNameAnnotation)
		}
		v, err := get(idx, d, ref)
		if err != nil {
			return nil, fmt.Errorf("imagebuild: %s: %s: %w", p, ref, err)
		}
		out[ref] = v
	}
	return out, nil
}
