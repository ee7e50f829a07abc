package testutil

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetNS runs f on a thread in the network namespace at path; sockets f
// opens stay in that namespace. A thread that cannot get back to its own
// namespace ends with f's goroutine (it stays locked).
func InNetNS(path string, f func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return err
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("back from %s: %w (the thread ends)", path, err)
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
