package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// CNIPluginsVersion is the version of github.com/containernetworking/plugins
// the tests use.
const CNIPluginsVersion = "v1.10.0"

// CNIPlugins lists the reference plugins CNIPluginDir builds.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

var cniPaths = map[string]string{
	"bridge":     "plugins/main/bridge",
	"host-local": "plugins/ipam/host-local",
	"loopback":   "plugins/main/loopback",
	"portmap":    "plugins/meta/portmap",
}

// CNIPluginDir builds the CNI reference plugins of CNIPluginsVersion from
// source (go install through the module proxy) into a directory shared by
// all test processes, once, and returns it. NRINET_CNI_BIN, if set, names a
// directory that already holds them.
func CNIPluginDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("NRINET_CNI_BIN"); dir != "" {
		return dir
	}
	dir := filepath.Join(os.TempDir(), "nrinet-cni-plugins-"+CNIPluginsVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Test binaries of several packages may run at once: serialize.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, p := range CNIPlugins {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			continue
		}
		pkg := fmt.Sprintf("github.com/containernetworking/plugins/%s@%s", cniPaths[p], CNIPluginsVersion)
		cmd := exec.Command("go", "install", pkg)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building CNI plugin %s: %v\n%s", p, err, out)
		}
	}
	return dir
}
