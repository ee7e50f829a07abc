package kubee2e

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// shimsLeftTimeout bounds the wait for a killed leftover shim to go.
const shimsLeftTimeout = 10 * time.Second

// reportShims fails the test for every containerd shim of the node that
// outlived containerd and the removal of every pod (stop), naming its
// sandbox, when it started and the containerd log lines that name that
// sandbox; then it kills it, by its PID, so that the node's directory can
// go and the next run starts clean. Shims exit when their last task is
// deleted: one that stays is a defect to chase, and the log lines are
// what is known of it once the node's directory is gone.
func (n *kubeNode) reportShims() {
	n.t.Helper()
	for _, s := range nodeShims(n.sock) {
		var lines []string
		if n.containerd != nil {
			for l := range strings.Lines(n.containerd.log.String()) {
				if strings.Contains(l, s.id) {
					lines = append(lines, strings.TrimRight(l, "\n"))
				}
			}
		}
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		n.t.Errorf("left behind on %s: containerd-shim-runc-v2 pid %d for sandbox %s, started %s; containerd's %d last lines naming it:\n%s",
			n.name, s.pid, s.id, s.started.UTC().Format(time.RFC3339), len(lines), strings.Join(lines, "\n"))
		if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
			n.t.Errorf("killing shim %d: %v", s.pid, err)
			continue
		}
		if err := testutil.Poll(shimsLeftTimeout, 50*time.Millisecond, func() error {
			if running(s.pid) {
				return errors.New("still running")
			}
			return nil
		}); err != nil {
			n.t.Errorf("shim %d: %v", s.pid, err)
		}
	}
}

// shim is a running containerd-shim-runc-v2 process.
type shim struct {
	pid     int
	id      string
	started time.Time
}

// nodeShims lists the shims whose -address is sock, the node's containerd
// socket.
func nodeShims(sock string) []shim {
	var shims []shim
	for _, p := range processesNamed("containerd-shim-runc-v2") {
		s := shim{pid: p.pid}
		ours := false
		for i := 0; i+1 < len(p.args); i++ {
			switch p.args[i] {
			case "-id":
				s.id = p.args[i+1]
			case "-address":
				ours = p.args[i+1] == sock
			}
		}
		if !ours {
			continue
		}
		if fi, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p.pid))); err == nil {
			s.started = fi.ModTime()
		}
		shims = append(shims, s)
	}
	return shims
}

// process is a running process: its PID and arguments.
type process struct {
	pid  int
	args []string
}

// processesNamed lists the processes whose executable (argv[0]) is named
// name.
func processesNamed(name string) []process {
	var out []process
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if filepath.Base(args[0]) == name {
			out = append(out, process{pid: pid, args: args})
		}
	}
	return out
}

// running says whether pid is a process that has not exited (a zombie,
// waiting for its parent to reap it, has).
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
