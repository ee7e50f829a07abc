package podnet_test

import (
	"context"
	"encoding/json"
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
			t.Cleanup(func() { deleteBridge(cfg.Bridge) })
			logs := &logBuffer{}
			p, err := podnet.New(context.Background(), podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
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

// TestPodnet_ConfigPrecedence: the plugin's own configuration (WithConfig)
// takes precedence over the runtime's, which is ignored with a log line
// (its bridge is never made); without one the runtime's is used. nri-cni
// follows the same rule (TestPlugin_Configure).
func TestPodnet_ConfigPrecedence(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	newCfg := func() podnet.Config {
		cfg := podnet.Config{
			Bridge: "nrpc" + randHex(4), Subnets: []string{fmt.Sprintf("198.19.%d.0/24", 1+int(randHex(1)[0])%250)},
			MTU: 1500, StateDir: filepath.Join(t.TempDir(), "state"),
		}
		t.Cleanup(func() { deleteBridge(cfg.Bridge) })
		return cfg
	}
	bridgeExists := func(name string) bool {
		_, err := os.Stat(filepath.Join("/sys/class/net", name))
		return err == nil
	}
	own, theirs := newCfg(), newCfg()
	b, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}

	logs := &logBuffer{}
	p, err := podnet.New(context.Background(), podnet.WithConfig(own), podnet.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Configure(context.Background(), string(b), "rt", "v1"); err != nil {
		t.Fatalf("Configure with the runtime's configuration besides its own: %v", err)
	}
	if !bridgeExists(own.Bridge) || bridgeExists(theirs.Bridge) {
		t.Errorf("bridges: own %s exists %v, the runtime's %s exists %v; want only its own", own.Bridge, bridgeExists(own.Bridge), theirs.Bridge, bridgeExists(theirs.Bridge))
	}
	if !strings.Contains(logs.String(), "ignoring the runtime's configuration") {
		t.Errorf("the ignored configuration was not logged:\n%s", logs)
	}

	q, err := podnet.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Configure(context.Background(), string(b), "rt", "v1"); err != nil {
		t.Fatalf("Configure with the runtime's configuration only: %v", err)
	}
	if !bridgeExists(theirs.Bridge) {
		t.Errorf("the runtime's bridge %s was not made by a plugin without its own configuration", theirs.Bridge)
	}
}
