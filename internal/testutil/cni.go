package testutil

import (
	"os"
	"testing"

	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/pins"
)

// CNIPlugins lists the reference plugins CNIPluginDir builds.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

var cniPaths = map[string]string{
	"bridge":     "plugins/main/bridge",
	"host-local": "plugins/ipam/host-local",
	"loopback":   "plugins/main/loopback",
	"portmap":    "plugins/meta/portmap",
}

// CNIPluginDir builds the CNI reference plugins of pins.CNIPlugins from
// source (go install through the module proxy) into a directory shared by
// all test processes, once, and returns it. NRINET_CNI_BIN, if set, names a
// directory that already holds them.
func CNIPluginDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("NRINET_CNI_BIN"); dir != "" {
		return dir
	}
	dir := gobin.Dir("nrinet-cni-plugins", pins.CNIPlugins)
	for _, p := range CNIPlugins {
		if _, err := gobin.Install(dir, "github.com/containernetworking/plugins/"+cniPaths[p], pins.CNIPlugins); err != nil {
			t.Fatalf("building CNI plugin %s: %v", p, err)
		}
	}
	return dir
}
