// Command pause is the pod sandbox process of the suite's pause image: it
// sleeps until SIGINT or SIGTERM and exits 0, and as PID 1 of its PID
// namespace (the pod's, when its containers share it) it reaps every child
// that is handed to it.
//
// It is built with CGO_ENABLED=0 at test time, so the image needs no other
// file.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: %v, exiting\n", sig)
		os.Exit(0)
	}
}

// reap collects every child that has exited, without blocking: several
// exits may arrive as one SIGCHLD.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
