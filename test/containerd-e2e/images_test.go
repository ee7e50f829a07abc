package containerde2e

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// busyboxApplets are the commands the busybox image has, as symlinks to
// /bin/busybox.
var busyboxApplets = []string{
	"sh", "cat", "echo", "env", "grep", "head", "hostname", "ip", "ls", "mount",
	"ping", "ping6", "ps", "sleep", "true", "wc",
}

// layerFile is one entry of an image layer.
type layerFile struct {
	name string      // path in the image, without a leading slash
	mode fs.FileMode // permissions; fs.ModeDir for a directory, fs.ModeSymlink for a link
	data []byte      // file content
	link string      // symlink target
}

// writePauseImage writes the pause image: the static binary at /pause, run
// as the entrypoint.
func writePauseImage(archive, ref, pauseBin string) error {
	bin, err := os.ReadFile(pauseBin)
	if err != nil {
		return err
	}
	files := []layerFile{{name: "pause", mode: 0o755, data: bin}}
	return writeImage(archive, ref, files, v1.Config{Entrypoint: []string{"/pause"}})
}

// writeBusyboxImage writes the busybox image: busybox at /bin/busybox,
// the applets as symlinks to it, /etc/passwd and /etc/group with root, and
// empty /tmp, /proc, /sys, /dev and /root.
func writeBusyboxImage(archive, ref, busyboxBin string) error {
	bin, err := os.ReadFile(busyboxBin)
	if err != nil {
		return err
	}
	files := []layerFile{{name: "bin", mode: fs.ModeDir | 0o755}}
	files = append(files, layerFile{name: "bin/busybox", mode: 0o755, data: bin})
	for _, a := range busyboxApplets {
		files = append(files, layerFile{name: "bin/" + a, mode: fs.ModeSymlink | 0o777, link: "busybox"})
	}
	for _, d := range []string{"dev", "etc", "proc", "root", "sys"} {
		files = append(files, layerFile{name: d, mode: fs.ModeDir | 0o755})
	}
	files = append(files,
		layerFile{name: "tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		layerFile{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		layerFile{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\n")},
	)
	return writeImage(archive, ref, files, v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}})
}

// writeImage builds a one-layer OCI image of files for linux on this
// machine's architecture and writes it as an OCI image archive (an OCI
// layout, tarred) whose index names it ref, for `ctr images import`.
func writeImage(archive, ref string, files []layerFile, cfg v1.Config) error {
	layerTar, err := tarFiles(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", runtime.GOARCH, cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}

	dir, err := os.MkdirTemp(filepath.Dir(archive), "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd names the imported image after io.containerd.image.name;
	// the OCI annotation is for other tools.
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return err
	}
	return tarDir(dir, archive)
}

// tarFiles returns a tar stream of files, owned by root, dated at the Unix
// epoch so that the layer's digest depends on the files only.
func tarFiles(files []layerFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: int64(f.mode.Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case f.mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer file %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer file %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the regular files and directories under dir as a tar
// archive at path, with names relative to dir.
func tarDir(dir, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s from %s: %w", path, dir, err)
	}
	return nil
}
