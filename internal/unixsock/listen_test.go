package unixsock_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/internal/unixsock"
)

// dialEnv makes the test binary, re-executed, dial the socket it names
// and exit: 0 if it connected, 1 if not (TestListen_OtherUserCannotConnect).
const dialEnv = "NRINET_UNIXSOCK_DIAL"

func TestMain(m *testing.M) {
	if path := os.Getenv(dialEnv); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestListen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, path string) (cleanup func())
		wantErr string
	}{
		{name: "nothing there"},
		{name: "a stale socket", prepare: func(t *testing.T, path string) func() {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			l.SetUnlinkOnClose(false)
			l.Close() // the file stays, nobody listens
			return nil
		}},
		{name: "a live socket", wantErr: "another process is listening on", prepare: func(t *testing.T, path string) func() {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			return func() { l.Close() }
		}},
		{name: "a regular file", wantErr: "exists and is not a socket", prepare: func(t *testing.T, path string) func() {
			if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{name: "a directory", wantErr: "exists and is not a socket", prepare: func(t *testing.T, path string) func() {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run", "sub")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "s.sock")
			if tc.prepare != nil {
				if cleanup := tc.prepare(t, path); cleanup != nil {
					defer cleanup()
				}
			}
			before, _ := os.Lstat(path)
			l, err := unixsock.Listen(path, 0o700)
			if tc.wantErr != "" {
				if err == nil {
					l.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Listen = %v, want an error naming %s and saying %q", err, path, tc.wantErr)
				}
				if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
					t.Errorf("%s changed: %v (%v), was %v", path, after, err, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Listen: %v", err)
			}
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatalf("dialing the socket: %v", err)
			}
			c.Close()
			checkOnlySocket(t, dir, "s.sock")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Close, %s: %v; want it removed", path, err)
			}
		})
	}
}

// checkOnlySocket checks that dir holds the socket name and nothing else
// (no private directory left behind).
func checkOnlySocket(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q, want only %s", dir, names, name)
	}
}

func TestListen_CreatesTheDirectory(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, mode := range []fs.FileMode{0o700, 0o755} {
		dir := filepath.Join(t.TempDir(), "a", "b")
		l, err := unixsock.Listen(filepath.Join(dir, "s.sock"), mode)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("directory mode %v, want %v", fi.Mode().Perm(), mode)
		}
	}
}

// TestListen_OtherUserCannotConnect: under umask 000, in a directory
// anyone may enter, the socket is 0600 and a process of another user
// cannot connect, while root can.
func TestListen_OtherUserCannotConnect(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	const nobody = 65534
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir, err := os.MkdirTemp("", "nrinet-unixsock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.sock")
	l, err := unixsock.Listen(path, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %v under umask 000, want 0600", perm)
	}
	// The test binary, copied where nobody may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	dial := func(cred *syscall.Credential) (string, error) {
		cmd := exec.Command(probe)
		cmd.Env = []string{dialEnv + "=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := dial(&syscall.Credential{Uid: nobody, Gid: nobody}); err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("uid %d dialing the socket: %v %q; want permission denied", nobody, err, out)
	}
	if out, err := dial(nil); err != nil {
		t.Errorf("root dialing the socket: %v %q", err, out)
	}
}

// TestListen_NeverBoundInPlace: the socket file is never created at its
// path, where it would be reachable with the umask's mode until a chmod;
// it arrives there by a rename, 0600 already. The directory's inotify
// events say so: no IN_CREATE of the socket's name, one IN_MOVED_TO.
func TestListen_NeverBoundInPlace(t *testing.T) {
	dir := t.TempDir()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	l, err := unixsock.Listen(filepath.Join(dir, "s.sock"), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buf := make([]byte, 64<<10)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		t.Fatalf("reading inotify events: %v", err)
	}
	var created, moved []string
	for off := 0; off+syscall.SizeofInotifyEvent <= n; {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)]), "\x00")
		switch {
		case ev.Mask&syscall.IN_CREATE != 0:
			created = append(created, name)
		case ev.Mask&syscall.IN_MOVED_TO != 0:
			moved = append(moved, name)
		}
		off += syscall.SizeofInotifyEvent + int(ev.Len)
	}
	for _, name := range created {
		if name == "s.sock" {
			t.Errorf("the socket was created in place (IN_CREATE s.sock); created %q", created)
		}
	}
	if len(moved) != 1 || moved[0] != "s.sock" {
		t.Errorf("moved into the directory: %q, want the socket once", moved)
	}
}
