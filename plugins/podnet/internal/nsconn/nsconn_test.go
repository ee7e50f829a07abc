package nsconn_test

import (
	"net"
	"os"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// TestDo: f runs in the namespace (it sees that namespace's links), and
// the caller's thread stays in its own.
func TestDo(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	name := "nrnc" + "do"
	f, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	testutil.Run(t, "ip", "-n", name, "link", "add", "nrncx", "type", "bridge")
	var seen bool
	if err := nsconn.Do(int(f.Fd()), func() error {
		_, err := net.InterfaceByName("nrncx")
		seen = err == nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Errorf("f did not run in the namespace")
	}
	if _, err := net.InterfaceByName("nrncx"); err == nil {
		t.Errorf("the namespace's link is seen outside it")
	}
	c, err := nsconn.NFTables(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if tables, err := c.ListTables(); err != nil || len(tables) != 0 {
		t.Errorf("a new namespace's tables: %v, %v", tables, err)
	}
}
