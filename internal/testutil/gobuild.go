package testutil

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// GoBuild builds pkgs with go build, run in dir, into outDir, each binary
// named after its package. It builds the way the images and release
// archives are built (see GoBuildCmd), so that every suite's binaries and
// theirs share the Go build cache; extraEnv is added to the environment.
func GoBuild(dir, outDir string, extraEnv []string, pkgs ...string) error {
	cmd := GoBuildCmd(dir, append([]string{"-o", outDir + "/"}, pkgs...)...)
	cmd.Env = append(cmd.Env, extraEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s (in %s): %v\n%s", strings.Join(cmd.Args, " "), dir, err, out)
	}
	return nil
}

// GoBuildCmd is "go build -trimpath args..." in dir with CGO_ENABLED=0:
// the flags of make build, make image and make release (static binaries,
// no build paths). Builds with other flags compile every dependency
// again, which on a fresh machine costs minutes per variant. $GO names
// the go command, if set.
func GoBuildCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
