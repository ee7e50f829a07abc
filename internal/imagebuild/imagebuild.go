package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repository is where the nrinet images are named: the image of component
// nri-podnet is Repository + "/nri-podnet". "localhost/" marks them as
// built here, pulled from no registry.
const Repository = "localhost/nrinet"

// LatestTag is the tag every image is given besides its version, and the
// one the manifests under deploy/ run, so that a freshly imported image is
// used without editing them.
const LatestTag = "latest"

// Ref returns the reference of component's image with tag, e.g.
// "localhost/nrinet/nri-podnet:v0.1.0". It does not check it; Write does.
func Ref(component, tag string) string {
	return Repository + "/" + component + ":" + tag
}

// The index annotations naming an image: containerd's, which `ctr images
// import` reads, and the OCI one, for other tools.
const (
	containerdNameAnnotation = "io.containerd.image.name"
	ociRefNameAnnotation     = "org.opencontainers.image.ref.name"
)

// Epoch is the modification time of every file the package writes.
var Epoch = time.Unix(0, 0).UTC()

// File is one entry of a layer.
type File struct {
	// Name is the path in the image, without a leading slash
	// ("usr/local/bin/nri-podnet").
	Name string
	// Mode holds the permission bits, and fs.ModeDir for a directory or
	// fs.ModeSymlink for a symbolic link; setuid, setgid and sticky bits
	// are kept.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target.
	Link string
}

// Dirs returns the directories leading to name, outermost first, as layer
// entries of mode 0755: Dirs("usr/local/bin/x") is usr, usr/local and
// usr/local/bin.
func Dirs(name string) []File {
	var dirs []File
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append([]File{{Name: d, Mode: fs.ModeDir | 0o755}}, dirs...)
	}
	return dirs
}

// Layer returns the uncompressed tar stream of files, in the given order,
// owned by root (0:0) and dated at Epoch.
func Layer(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if f.Name == "" || path.IsAbs(f.Name) || path.Clean(f.Name) != f.Name || strings.HasPrefix(f.Name, "../") {
			return nil, fmt.Errorf("imagebuild: layer file name %q is not a clean relative path", f.Name)
		}
		h := &tar.Header{
			Name:    f.Name,
			Mode:    int64(f.Mode.Perm()),
			ModTime: Epoch,
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSetuid != 0 {
			h.Mode |= 0o4000
		}
		if f.Mode&fs.ModeSetgid != 0 {
			h.Mode |= 0o2000
		}
		if f.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case f.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, f.Name+"/"
		case f.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		case f.Mode.IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		default:
			return nil, fmt.Errorf("imagebuild: layer file %s: unsupported mode %v", f.Name, f.Mode)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("imagebuild: layer file %s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("imagebuild: layer file %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Image returns a one-layer OCI image of files for linux/arch with the
// configuration cfg (entrypoint, environment, ...). Its config has no
// creation time, so the image digest depends on the inputs only.
func Image(files []File, arch string, cfg v1.Config) (v1.Image, error) {
	layerTar, err := Layer(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", arch, cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	return img, nil
}

// Write writes img as an OCI image archive at archive: an OCI image layout,
// tarred, whose index lists img once per ref, named by the annotations
// io.containerd.image.name (which `ctr images import` reads) and
// org.opencontainers.image.ref.name. Every ref must be a valid tagged
// reference. The archive is replaced atomically: a failed Write leaves no
// partial file at archive.
func Write(archive string, img v1.Image, refs ...string) error {
	return write(archive, refs, func(p layout.Path, opt layout.Option) error { return p.AppendImage(img, opt) })
}

// WriteIndex writes idx, an image index of one image per platform (Index),
// as Write writes an image: `ctr images import` then keeps the index under
// each ref and unpacks the image of the node's platform.
func WriteIndex(archive string, idx v1.ImageIndex, refs ...string) error {
	return write(archive, refs, func(p layout.Path, opt layout.Option) error { return p.AppendIndex(idx, opt) })
}

// write writes the archive whose layout's index has one entry per ref,
// each added by add with the annotations naming it.
func write(archive string, refs []string, add func(layout.Path, layout.Option) error) error {
	if len(refs) == 0 {
		return fmt.Errorf("imagebuild: %s: no image reference", archive)
	}
	for _, ref := range refs {
		if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
			return fmt.Errorf("imagebuild: image reference %q: %w", ref, err)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(archive), ".oci-layout-")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	for _, ref := range refs {
		if err := add(p, layout.WithAnnotations(map[string]string{
			containerdNameAnnotation: ref,
			ociRefNameAnnotation:     ref,
		})); err != nil {
			return fmt.Errorf("imagebuild: %s: %w", ref, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(archive), ".image-*.tar")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = tarDir(dir, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), archive)
	}
	if err != nil {
		return fmt.Errorf("imagebuild: writing %s: %w", archive, err)
	}
	return nil
}

// tarDir writes the directories and regular files under dir to w as a tar
// stream, in lexical order, with names relative to dir, owned by root and
// dated at Epoch: directories 0755, files 0644.
func tarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: Epoch, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
