package cri

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// createNetNS creates a network namespace bind-mounted at
// NetNSDir/name and returns its path. The namespace is created on a
// locked OS thread, which is moved back to its original namespace; a
// thread that cannot be moved back is discarded.
func createNetNS(name string) (string, error) {
	path := netnsPath(name)
	if _, err := os.Lstat(path); err == nil {
		return "", fmt.Errorf("creating network namespace %q: %s already exists", name, path)
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		ns, err := netns.NewNamed(name)
		if err == nil {
			ns.Close()
		}
		if serr := netns.Set(orig); serr != nil {
			// Keep the thread locked: it exits with this goroutine.
			errc <- errors.Join(err, fmt.Errorf("restoring the thread's network namespace: %w", serr))
			return
		}
		goruntime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		// Remove what this call made, but never a namespace that
		// appeared under the same name meanwhile.
		if !errors.Is(err, unix.EEXIST) && !errors.Is(err, os.ErrExist) {
			if derr := deleteNetNS(name); derr != nil {
				err = errors.Join(err, derr)
			}
		}
		return "", fmt.Errorf("creating network namespace %q: %w", name, err)
	}
	return path, nil
}

// deleteNetNS unmounts and removes a named network namespace; a missing
// one is fine.
func deleteNetNS(name string) error {
	path := netnsPath(name)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("deleting network namespace %q: unmounting %s: %w", name, path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting network namespace %q: %w", name, err)
	}
	return nil
}

// netnsExists reports whether path is a mounted network namespace.
func netnsExists(path string) bool {
	if path == "" {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
