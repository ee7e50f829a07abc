package unixsock

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Listen listens on the unix socket path, mode 0600, creating its parent
// directory with dirMode if it is missing. Closing the listener removes
// the socket file.
func Listen(path string, dirMode fs.FileMode) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("creating the directory of socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; not replacing it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another process is listening on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	private, err := os.MkdirTemp(dir, ".sock-")
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	defer os.RemoveAll(private)
	// MkdirTemp creates it 0700; set it again in case of an odd umask
	// handling, before anything is bound in it.
	if err := os.Chmod(private, 0o700); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	tmp := filepath.Join(private, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	// The listener must not remove the temporary name at Close: the
	// socket lives at path from here on.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &unlinkingListener{Listener: l, path: path}, nil
}

// unlinkingListener removes the socket file when it is closed.
type unlinkingListener struct {
	net.Listener
	path string
	once sync.Once
}

func (l *unlinkingListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}
