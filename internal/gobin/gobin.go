package gobin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Dir is the shared cache directory for a set of tools at a version, e.g.
// Dir("nrinet-crictl", "v1.37.0") = $TMPDIR/nrinet-crictl-v1.37.0.
func Dir(name, version string) string {
	return filepath.Join(os.TempDir(), name+"-"+version)
}

// Install runs `go install pkg@version` with GOBIN=dir unless dir already
// holds the binary, and returns the binary's path. Processes that install
// into the same dir at once are serialized with a lock file.
func Install(dir, pkg, version string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // installed by another process meanwhile
	}
	cmd := exec.Command("go", "install", pkg+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing %s@%s: %v\n%s", pkg, version, err, out)
	}
	return bin, nil
}
