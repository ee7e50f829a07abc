package containerde2e

import (
	"io/fs"
	"os"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// busyboxApplets are the commands the busybox image has, as symlinks to
// /bin/busybox.
var busyboxApplets = []string{
	"sh", "cat", "echo", "env", "grep", "head", "hostname", "ip", "ls", "mount",
	"ping", "ping6", "ps", "sleep", "stat", "true", "wc",
}

// writePauseImage writes the pause image: the static binary at /pause, run
// as the entrypoint.
func writePauseImage(archive, ref, pauseBin string) error {
	bin, err := os.ReadFile(pauseBin)
	if err != nil {
		return err
	}
	files := []imagebuild.File{{Name: "pause", Mode: 0o755, Data: bin}}
	return writeImage(archive, ref, files, v1.Config{Entrypoint: []string{"/pause"}})
}

// writeBusyboxImage writes the busybox image with busyboxApplets.
func writeBusyboxImage(archive, ref, busyboxBin string) error {
	img, err := busyboxImage(busyboxBin, busyboxApplets)
	if err != nil {
		return err
	}
	return imagebuild.Write(archive, img, ref)
}

// busyboxImage builds a busybox image: busybox at /bin/busybox, the
// applets as symlinks to it, /etc/passwd and /etc/group with root, and
// empty /tmp, /proc, /sys, /dev and /root.
func busyboxImage(busyboxBin string, applets []string) (v1.Image, error) {
	bin, err := os.ReadFile(busyboxBin)
	if err != nil {
		return nil, err
	}
	files := []imagebuild.File{{Name: "bin", Mode: fs.ModeDir | 0o755}}
	files = append(files, imagebuild.File{Name: "bin/busybox", Mode: 0o755, Data: bin})
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		files = append(files, imagebuild.File{Name: "bin/" + a, Mode: fs.ModeSymlink | 0o777, Link: "busybox"})
	}
	for _, d := range []string{"dev", "etc", "proc", "root", "sys"} {
		files = append(files, imagebuild.File{Name: d, Mode: fs.ModeDir | 0o755})
	}
	files = append(files,
		imagebuild.File{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		imagebuild.File{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		imagebuild.File{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\n")},
	)
	return imagebuild.Image(files, runtime.GOARCH, v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}})
}

// writeImage builds a one-layer OCI image of files for linux on this
// machine's architecture and writes it as an OCI image archive whose index
// names it ref, for `ctr images import` (package internal/imagebuild, as
// make image does).
func writeImage(archive, ref string, files []imagebuild.File, cfg v1.Config) error {
	img, err := imagebuild.Image(files, runtime.GOARCH, cfg)
	if err != nil {
		return err
	}
	return imagebuild.Write(archive, img, ref)
}
