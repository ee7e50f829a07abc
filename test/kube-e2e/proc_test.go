package kubee2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// logBuffer is a concurrency-safe sink for a process's output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tail returns the last n lines written.
func (l *logBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A proc is a process the suite started: a control plane component, a
// node's nrinetd or nri-podnet.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *logBuffer
	// exited is closed when the process has exited and been waited for.
	exited chan struct{}
	// pid is the process's ID, kept for the leak check after it exited.
	pid int
}

// procStopTimeout is how long a process may take to exit after SIGTERM
// before it gets SIGKILL.
const procStopTimeout = 15 * time.Second

// startProc starts bin with args, its output into its log, in the network
// namespace at netnsPath ("" for the test's own), and registers a cleanup
// that stops it. The process gets SIGKILL if the test process dies
// (Pdeathsig), so that a crashed test leaves no control plane running.
func startProc(t testing.TB, name, netnsPath string, extraEnv []string, bin string, args ...string) *proc {
	t.Helper()
	p := launchProc(t, name, netnsPath, extraEnv, bin, args...)
	t.Cleanup(func() { p.stopAndReport(t) })
	return p
}

// launchProc starts a process as startProc does, without a cleanup: the
// caller stops it (stopAndReport), at the point of its teardown it
// chooses.
func launchProc(t testing.TB, name, netnsPath string, extraEnv []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: &logBuffer{}, exited: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startInNetNS(netnsPath, cmd); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p.cmd, p.pid = cmd, cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p
}

// stopAndReport stops the process and, if the test failed, logs the end of
// its output.
func (p *proc) stopAndReport(t testing.TB) {
	if err := p.stop(); err != nil {
		t.Error(err)
	}
	if t.Failed() {
		t.Logf("%s (pid %d, %v) log, last 80 lines:\n%s", p.name, p.pid, p.cmd.ProcessState, p.log.tail(80))
	}
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the exit, sending SIGKILL after
// procStopTimeout; it reports a process that needed SIGKILL. Stopping a
// stopped process does nothing.
func (p *proc) stop() error {
	if !p.running() {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(procStopTimeout):
		conns := p.connections()
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killed it; its TCP connections then:\n%s", p.name, p.pid, procStopTimeout, conns)
	}
}

// connections lists the process's TCP connections in its network
// namespace (ss, run in it through /proc/<pid>/ns/net): what a process
// that does not exit may be waiting for.
func (p *proc) connections() string {
	var out []byte
	err := inNetNS(fmt.Sprintf("/proc/%d/ns/net", p.pid), func() error {
		var err error
		out, err = exec.Command("ss", "-Htanp").CombinedOutput()
		return err
	})
	if err != nil {
		return fmt.Sprintf("(ss: %v: %s)", err, out)
	}
	var mine []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, fmt.Sprintf("pid=%d,", p.pid)) {
			mine = append(mine, l)
		}
	}
	return strings.Join(mine, "\n")
}

// startInNetNS starts cmd in the network namespace at path ("" for the
// caller's): a thread of its own enters the namespace (setns, only the
// network namespace: the mount namespace stays the host's, so that the
// pod namespaces nrinetd bind-mounts under /run/netns are seen by every
// process), forks the child there, and returns to the original
// namespace. The thread is given back to the Go runtime only if that
// return succeeded; otherwise it ends with its goroutine.
func startInNetNS(path string, cmd *exec.Cmd) error {
	if path == "" {
		return cmd.Start()
	}
	return inNetNS(path, cmd.Start)
}

// inNetNS runs f on a thread in the network namespace at path: a socket
// f opens belongs to that namespace for its whole life, and a child f
// forks starts in it. f must not start goroutines that depend on the
// namespace.
func inNetNS(path string, f func() error) error {
	if err := testutil.InNetNS(path, f); err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	return nil
}

// run runs a command and returns its combined output, failing the test if
// it fails.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitFor polls cond every interval until it returns true, failing the
// test after patience with what and cond's last message.
func waitFor(t testing.TB, what string, patience, interval time.Duration, cond func() (bool, string)) {
	t.Helper()
	err := testutil.Poll(patience, interval, func() error {
		if ok, msg := cond(); !ok {
			return errors.New(msg)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

// jsonUnmarshal decodes JSON text into v.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
