package runtime_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/runtime"
)

func TestRuntime_Socket(t *testing.T) {
	start := func(sock string) error {
		rt, err := runtime.New("test", "v0", runtime.WithSocketPath(sock), runtime.WithPluginPath(""))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(context.Background()); err != nil {
			return err
		}
		t.Cleanup(func() { rt.Stop(context.Background()) })
		return nil
	}

	t.Run("creates a private directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run", "nri")
		if err := start(filepath.Join(dir, "nri.sock")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("socket directory mode %v, want 0700", fi.Mode().Perm())
		}
	})

	t.Run("replaces a stale socket", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "nri.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close() // the file stays, nobody listens: stale
		if err := start(sock); err != nil {
			t.Fatalf("Start with a stale socket: %v", err)
		}
	})

	t.Run("refuses a live socket", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "nri.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := start(sock); err == nil || !strings.Contains(err.Error(), "another process is listening") {
			t.Fatalf("Start on a live socket = %v", err)
		}
	})

	t.Run("refuses to replace a regular file", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "nri.sock")
		os.WriteFile(sock, []byte("data"), 0o600)
		if err := start(sock); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("Start on a regular file = %v", err)
		}
	})
}
