package podnet_test

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// TestPodnet_StateDirMode: an existing state directory open to others, or
// with special bits, is tightened to 0700, and the change logged; a
// missing one is created 0700.
func TestPodnet_StateDirMode(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, tc := range []struct {
		name    string
		mode    fs.FileMode // of the existing directory; 0: missing
		wantLog bool
	}{
		{"world-writable sticky", fs.ModeSticky | 0o777, true},
		{"readable by others", 0o755, true},
		{"setgid", fs.ModeSetgid | 0o700, true},
		{"already 0700", 0o700, false},
		{"missing", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if tc.mode != 0 {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, tc.mode); err != nil { // not subject to the umask
					t.Fatal(err)
				}
			}
			cfg := podnet.Config{
				Bridge: "nrps" + randHex(4), Subnets: []string{fmt.Sprintf("198.19.%d.0/24", 1+int(randHex(1)[0])%250)},
				MTU: 1500, StateDir: dir,
			}
			t.Cleanup(func() { testutil.DeleteLink(cfg.Bridge) })
			logs := &logBuffer{}
			p, err := podnet.New(&cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() &^ fs.ModeDir; got != 0o700 {
				t.Errorf("state directory mode = %v, want %v", got, fs.FileMode(0o700))
			}
			if logged := strings.Contains(logs.String(), "tightened the state directory"); logged != tc.wantLog {
				t.Errorf("logged a tightening: %v, want %v; logs:\n%s", logged, tc.wantLog, logs)
			}
		})
	}
}
