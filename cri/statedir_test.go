package cri_test

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/runtime"
)

// wideDir creates a directory with exactly the given mode (the umask
// does not apply to chmod).
func wideDir(t *testing.T, mode fs.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dirMode returns the permission and special bits of a directory.
func dirMode(t *testing.T, dir string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid | fs.ModeSetuid)
}

var stateDirModes = []struct {
	name string
	mode fs.FileMode
	want fs.FileMode
}{
	{"1777", 0o777 | fs.ModeSticky, 0o700},
	{"0755", 0o755, 0o700},
	{"0750", 0o750, 0o700},
	{"0700", 0o700, 0o700},
}

// TestOpenStore_TightensDir: the store's directory is made 0700 when it
// exists with a wider mode.
func TestOpenStore_TightensDir(t *testing.T) {
	for _, tc := range stateDirModes {
		t.Run(tc.name, func(t *testing.T) {
			dir := wideDir(t, tc.mode)
			s, err := cri.OpenStore(filepath.Join(dir, "sandboxes.db"))
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if got := dirMode(t, dir); got != tc.want {
				t.Errorf("store directory created with %v has mode %v, want %v", tc.mode, got, tc.want)
			}
		})
	}
}

// TestNew_TightensStateDir: the state directory of WithStateDir is made
// 0700 when it exists with a wider mode, and the server says so.
func TestNew_TightensStateDir(t *testing.T) {
	for _, tc := range stateDirModes {
		t.Run(tc.name, func(t *testing.T) {
			dir := wideDir(t, tc.mode)
			store, err := cri.OpenStore(filepath.Join(t.TempDir(), "sandboxes.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			rt, err := runtime.New(cri.RuntimeName, "0.1.0", runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""))
			if err != nil {
				t.Fatal(err)
			}
			logs := &logBuffer{}
			if _, err := cri.New(rt, store, cri.WithStateDir(dir), cri.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))); err != nil {
				t.Fatal(err)
			}
			if got := dirMode(t, dir); got != tc.want {
				t.Errorf("state directory created with %v has mode %v, want %v", tc.mode, got, tc.want)
			}
			if warned := strings.Contains(logs.String(), "mode 0700"); warned != (tc.mode != tc.want) {
				t.Errorf("logged the change: %v, want %v; log:\n%s", warned, tc.mode != tc.want, logs)
			}
		})
	}
}
