package nsexec

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs f on a thread of its own in the network namespace fd refers to
// (0: on the calling goroutine, in the process's), so that what f opens
// (a socket, /proc/sys/net) is that namespace's. A thread that cannot get
// back to its namespace is not reused: it ends with its goroutine.
func Do(fd int, f func() error) error {
	if fd == 0 {
		return f()
	}
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
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("entering the network namespace: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("back from the network namespace: %w", err))
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
