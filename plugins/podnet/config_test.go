package podnet_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/nrinet/nrinet/plugins/podnet"
)

// TestFromFile_Contrib reads contrib/10-podnet.conf, the example that make
// install and the release tarball ship for /etc/nri/conf.d/10-podnet.conf.
func TestFromFile_Contrib(t *testing.T) {
	c, err := podnet.FromFile(filepath.Join("..", "..", "contrib", "10-podnet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Bridge != podnet.DefaultBridge || c.MTU != podnet.DefaultMTU || c.StateDir != podnet.DefaultStateDir ||
		!slices.Equal(c.Subnets, []string{"198.18.0.0/24", "fd00:198:18::/64"}) {
		t.Errorf("contrib/10-podnet.conf = %+v", c)
	}
}
