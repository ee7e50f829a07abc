package imagebuild

import (
	"io/fs"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Busybox builds a busybox image for arch from the static binary at bin:
// busybox at /bin/busybox, the applets as symlinks to it, /etc/passwd and
// /etc/group with root, and empty /tmp, /proc, /sys, /dev and /root; its
// PATH is /bin and its command sh.
func Busybox(bin, arch string, applets []string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	files := []File{{Name: "bin", Mode: fs.ModeDir | 0o755}, {Name: "bin/busybox", Mode: 0o755, Data: data}}
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		files = append(files, File{Name: "bin/" + a, Mode: fs.ModeSymlink | 0o777, Link: "busybox"})
	}
	for _, d := range []string{"dev", "etc", "proc", "root", "sys"} {
		files = append(files, File{Name: d, Mode: fs.ModeDir | 0o755})
	}
	files = append(files,
		File{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		File{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		File{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\n")},
	)
	return Image(files, arch, v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}})
}

// Pause builds the pause image for arch from the static binary at bin,
// at /pause, run as the entrypoint.
func Pause(bin, arch string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	return Image([]File{{Name: "pause", Mode: 0o755, Data: data}}, arch, v1.Config{Entrypoint: []string{"/pause"}})
}
