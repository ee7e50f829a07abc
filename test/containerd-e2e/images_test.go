package containerde2e

import (
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
	img, err := imagebuild.Pause(pauseBin, runtime.GOARCH)
	if err != nil {
		return err
	}
	return imagebuild.Write(archive, img, ref)
}

// writeBusyboxImage writes the busybox image with busyboxApplets.
func writeBusyboxImage(archive, ref, busyboxBin string) error {
	img, err := busyboxImage(busyboxBin, busyboxApplets)
	if err != nil {
		return err
	}
	return imagebuild.Write(archive, img, ref)
}

// busyboxImage builds a busybox image with applets (imagebuild.Busybox).
func busyboxImage(busyboxBin string, applets []string) (v1.Image, error) {
	return imagebuild.Busybox(busyboxBin, runtime.GOARCH, applets)
}
