package testutil

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// GoBuild builds pkgs of the module in dir into outDir with $GO (default
// go), extraEnv added to the environment (such as CGO_ENABLED=0).
func GoBuild(dir, outDir string, extraEnv []string, pkgs ...string) error {
	args := append([]string{"build", "-o", outDir + "/"}, pkgs...)
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}
