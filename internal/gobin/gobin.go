package gobin

import (
	"encoding/json"
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
	return buildOnce(dir, filepath.Base(pkg), func(bin string) error {
		cmd := exec.Command("go", "install", pkg+"@"+version)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("installing %s@%s: %v\n%s", pkg, version, err, out)
		}
		return nil
	})
}

// InstallTest builds the test binary of package pkg (a path inside module
// mod, e.g. "cmd/critest") at version with `go test -c`, into dir, unless
// dir already holds it, and returns the binary's path. It is for programs
// shipped as a package of tests only, which `go install` refuses ("no
// non-test Go files"), such as cri-tools' critest. The module is fetched
// through the module proxy and built in the module cache, with its own
// go.mod and go.sum.
func InstallTest(dir, mod, pkg, version string) (string, error) {
	return buildOnce(dir, filepath.Base(pkg), func(bin string) error {
		env := append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		dl := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
		dl.Env = env
		out, err := dl.Output()
		if err != nil {
			return fmt.Errorf("go mod download %s@%s: %v\n%s", mod, version, err, out)
		}
		var info struct{ Dir, Error string }
		if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
			return fmt.Errorf("go mod download %s@%s: no module directory (%v %s)", mod, version, err, info.Error)
		}
		tmp := bin + ".tmp"
		build := exec.Command("go", "test", "-c", "-o", tmp, "./"+pkg)
		build.Dir, build.Env = info.Dir, env
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s/%s@%s: %v\n%s", mod, pkg, version, err, out)
		}
		return os.Rename(tmp, bin)
	})
}

// buildOnce returns dir/name, running build (which must leave the binary
// there) unless it exists. Processes that build into the same dir at once
// are serialized with a lock file in it; the one that comes second finds
// the binary and builds nothing.
func buildOnce(dir, name string, build func(bin string) error) (string, error) {
	bin := filepath.Join(dir, name)
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
		return bin, nil // built by another process meanwhile
	}
	if err := build(bin); err != nil {
		return "", err
	}
	return bin, nil
}
