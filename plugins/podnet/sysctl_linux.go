package podnet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
)

// noRouterAdvertisements sets the IPv6 sysctl accept_ra of the named
// interface to 0 in the network namespace of the calling thread: a router
// advertisement it receives then changes no route and makes no address.
// A kernel without IPv6 (no /proc/sys/net/ipv6) has nothing to turn off.
// Equivalent to: sysctl -w net.ipv6.conf.$name.accept_ra=0
func noRouterAdvertisements(name string) error {
	p := filepath.Join("/proc/sys/net/ipv6/conf", name, "accept_ra")
	err := os.WriteFile(p, []byte("0\n"), 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat("/proc/sys/net/ipv6"); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("turning off router advertisements on %s (%s = 0): %w", name, p, err)
	}
	return nil
}

// inNetNS runs f on a thread of its own in the network namespace ns (so
// that /proc/sys/net is ns's). A thread that cannot get back to the
// process's namespace is not reused: it ends with its goroutine.
func inNetNS(ns netns.NsHandle, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("the thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("entering the pod's network namespace: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("back to the node's network namespace: %w", err))
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
