package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemon_TightensStateDir: nrinetd makes an existing state directory
// that others may use 0700, and logs it.
func TestDaemon_TightensStateDir(t *testing.T) {
	d := newDaemon(t, daemonConfig{prepare: func(d *daemon) {
		state := filepath.Join(d.dir, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			d.t.Fatal(err)
		}
		if err := os.Chmod(state, 0o777|os.ModeSticky); err != nil {
			d.t.Fatal(err)
		}
	}})
	fi, err := os.Stat(filepath.Join(d.dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != 0o700 {
		t.Errorf("state directory has mode %v after nrinetd started, want 0700", got)
	}
	if !strings.Contains(d.log.String(), "mode 0700") {
		t.Errorf("nrinetd did not log the change:\n%s", d.log)
	}
}
