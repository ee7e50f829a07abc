package kubee2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image references of stage 3's node: the pause image is containerd's
// sandbox image (pinned, never pulled), the busybox image the
// Deployment's (imagePullPolicy Never).
const (
	pauseRef   = "localhost/nrinet-kube-e2e/pause:1"
	busyboxRef = "localhost/nrinet-kube-e2e/busybox:1"
)

// imageFile is one entry of an image's only layer.
type imageFile struct {
	path string      // without a leading slash
	mode fs.FileMode // permissions, with fs.ModeDir or fs.ModeSymlink; fs.ModeSticky (directories) and fs.ModeSetuid (files) too
	data []byte
	link string // a symlink's target
	// xattrs are extended attributes, e.g. "security.capability" for a
	// file capability, written as PAX records ("SCHILY.xattr.<name>"),
	// which containerd applies when it unpacks the layer.
	xattrs map[string]string
}

// writeImage writes a one-layer image of files for linux on this
// machine's architecture, with the configuration cfg, as an image archive
// (docker save format) tagged ref, for `ctr images import`.
func writeImage(archive, ref string, files []imageFile, cfg v1.Config) error {
	layer, err := layerTar(files)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return writeLayerImage(archive, ref, layer, cfg)
}

// layerTar returns the uncompressed tar stream of files, in the given
// order, owned by root and dated at the epoch.
func layerTar(files []imageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: int64(f.mode.Perm()), ModTime: epoch, Format: tar.FormatPAX}
		for k, v := range f.xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		switch {
		case f.mode&fs.ModeDir != 0:
			h.Typeflag, h.Name = tar.TypeDir, f.path+"/"
			if f.mode&fs.ModeSticky != 0 {
				h.Mode |= 0o1000
			}
		case f.mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
			if f.mode&fs.ModeSetuid != 0 {
				h.Mode |= 0o4000
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer file %s: %w", f.path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return nil, fmt.Errorf("layer file %s: %w", f.path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeLayerImage writes the image of the one layer layerTar (an
// uncompressed tar stream) and the configuration cfg, as writeImage does.
// The layer is compressed at gzip's fastest level: the archive is read
// once, on this machine.
func writeLayerImage(archive, ref string, layerTar []byte, cfg v1.Config) error {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config, cf.Created = "linux", runtime.GOARCH, cfg, v1.Time{Time: time.Unix(0, 0)}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	if err := tarball.Write(tag, img, f); err != nil {
		f.Close()
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return f.Close()
}

// writePauseImage writes the pause image: cmd/pause at /pause.
func writePauseImage(archive, pauseBin string) error {
	bin, err := os.ReadFile(pauseBin)
	if err != nil {
		return err
	}
	return writeImage(archive, pauseRef, []imageFile{{path: "pause", mode: 0o755, data: bin}},
		v1.Config{Entrypoint: []string{"/pause"}})
}

// busyboxApplets are the busybox image's commands, symlinks to busybox.
var busyboxApplets = []string{"sh", "ip", "ping", "ping6", "sleep", "cat", "hostname"}

// writeBusyboxImage writes the busybox image: a static busybox at
// /bin/busybox with its applets, /etc/passwd and /etc/group with root,
// and the usual empty directories.
func writeBusyboxImage(archive, busyboxBin string) error {
	bin, err := os.ReadFile(busyboxBin)
	if err != nil {
		return err
	}
	files := []imageFile{{path: "bin", mode: fs.ModeDir | 0o755}, {path: "bin/busybox", mode: 0o755, data: bin}}
	for _, a := range busyboxApplets {
		files = append(files, imageFile{path: "bin/" + a, mode: fs.ModeSymlink | 0o777, link: "busybox"})
	}
	for _, d := range []string{"dev", "etc", "proc", "root", "sys"} {
		files = append(files, imageFile{path: d, mode: fs.ModeDir | 0o755})
	}
	files = append(files,
		imageFile{path: "tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		imageFile{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		imageFile{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\n")},
	)
	return writeImage(archive, busyboxRef, files, v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}})
}
