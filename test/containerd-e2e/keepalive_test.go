package containerde2e

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// keepalive runs containerd and starts it again, wait after it exited,
// until stopped: the keepalive loop of containerd's
// script/test/utils.sh, which its CRI integration tests need. Their
// RestartContainerd kills containerd by name (pkill) and expects it back.
type keepalive struct {
	command func() *exec.Cmd
	wait    time.Duration
	log     func(format string, args ...any)

	mu sync.Mutex // guards the fields below
	// proc is the running containerd, nil between runs.
	proc *os.Process
	// starts counts the processes started.
	starts int
	// stopping is set by stop: no new process is started.
	stopping bool
	// err is why the loop ended early (a process that could not start).
	err error

	// quit is closed by stop; done is closed when the loop has ended.
	quit, done chan struct{}
}

// startKeepalive starts the loop: command makes each process (its output
// already directed), log reports each exit.
func startKeepalive(command func() *exec.Cmd, wait time.Duration, log func(string, ...any)) *keepalive {
	k := &keepalive{command: command, wait: wait, log: log, quit: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	return k
}

func (k *keepalive) loop() {
	defer close(k.done)
	for {
		k.mu.Lock()
		if k.stopping {
			k.mu.Unlock()
			return
		}
		cmd := k.command()
		if err := cmd.Start(); err != nil {
			k.err = fmt.Errorf("starting %s: %w", cmd.Path, err)
			k.mu.Unlock()
			return
		}
		k.proc = cmd.Process
		k.starts++
		k.mu.Unlock()

		cmd.Wait()
		k.mu.Lock()
		k.proc = nil
		k.mu.Unlock()
		select {
		case <-k.quit:
			return
		default:
		}
		k.log("keepalive: containerd (PID %d) exited: %v; starting it again in %v", cmd.Process.Pid, cmd.ProcessState, k.wait)
		select {
		case <-k.quit:
			return
		case <-time.After(k.wait):
		}
	}
}

// running reports whether a containerd process is up.
func (k *keepalive) running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.proc != nil
}

// restarts is how many times the loop started containerd again.
func (k *keepalive) restarts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return max(k.starts-1, 0)
}

// kill ends the loop and kills the running containerd with SIGKILL, as a
// crash would, so that it cleans nothing up.
func (k *keepalive) kill() {
	k.mu.Lock()
	if !k.stopping {
		k.stopping = true
		close(k.quit)
	}
	proc := k.proc
	k.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
	<-k.done
}

// stop ends the loop and the running containerd: SIGTERM, and SIGKILL
// after timeout (reported as an error).
func (k *keepalive) stop(timeout time.Duration) error {
	k.mu.Lock()
	if k.stopping {
		k.mu.Unlock()
		<-k.done
		return nil
	}
	k.stopping = true
	close(k.quit)
	proc := k.proc
	k.mu.Unlock()
	if proc == nil {
		<-k.done
		return k.err
	}
	proc.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		return k.err
	case <-time.After(timeout):
		proc.Kill()
		<-k.done
		return fmt.Errorf("containerd (PID %d) did not exit within %v of SIGTERM; killed it", proc.Pid, timeout)
	}
}
