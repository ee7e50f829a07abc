package testutil

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RunStatus runs cmd, prepared by the caller (its output, its
// environment), to its end and returns its exit status; a command that
// cannot be started, or is ended by a signal, fails the test.
func RunStatus(t testing.TB, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	return -1
}

// Proc is a process a test started and owns, such as an NRI plugin run
// as a separate process: its output is kept, and a goroutine waits for
// it, so that Exited tells when it ended.
type Proc struct {
	// Name names it in messages.
	Name           string
	Cmd            *exec.Cmd
	Stdout, Stderr *LogBuffer
	exited         chan struct{}
}

// StartProc starts bin with args.
func StartProc(name, bin string, args ...string) (*Proc, error) {
	return StartCmd(name, exec.Command(bin, args...))
}

// StartCmd starts cmd, prepared by the caller (its environment, its
// directory). Its output goes to Stdout and Stderr unless the caller set
// cmd.Stdout or cmd.Stderr.
func StartCmd(name string, cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, Cmd: cmd, Stdout: &LogBuffer{}, Stderr: &LogBuffer{}, exited: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = p.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.Stderr
	}
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.Cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed once the process has exited (and Cmd.ProcessState is
// set).
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// WaitExit waits up to d for the process to exit and reports whether it
// did.
func (p *Proc) WaitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Stop ends the process: SIGTERM, then SIGKILL if it has not exited
// within d, which it reports as an error. It waits until the process has
// exited.
func (p *Proc) Stop(d time.Duration) error {
	if !p.Running() {
		return nil
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if !p.WaitExit(d) {
		p.Kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", p.Name, d)
	}
	return nil
}

// Kill ends the process with SIGKILL and waits until it has exited.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	<-p.exited
}

// Lines returns its standard output, line by line.
func (p *Proc) Lines() []string { return strings.Split(p.Stdout.String(), "\n") }

// WaitLine waits until the process printed line on its standard output,
// failing t if it exits first or does not print it within d.
func (p *Proc) WaitLine(t testing.TB, line string, d time.Duration) {
	t.Helper()
	err := Poll(d, 20*time.Millisecond, func() error {
		switch {
		case slices.Contains(p.Lines(), line):
			return nil
		case !p.Running():
			return Abort(fmt.Errorf("%s exited (%v) before printing %q", p.Name, p.Cmd.ProcessState, line))
		}
		return fmt.Errorf("%s did not print %q", p.Name, line)
	})
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, p.Stdout, p.Stderr)
	}
}
