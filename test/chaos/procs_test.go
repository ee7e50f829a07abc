package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid int
	comm      string
	state     byte // R, S, D, Z, ...
	start     uint64
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (%s, state %c, parent %d)", p.pid, p.comm, p.state, p.ppid)
}

// readProc reads /proc/<pid>/stat; ok is false if the process is gone.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	// comm is in parentheses and may contain anything; the fields after
	// the last ')' are space-separated.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, comm: s[open+1 : end], state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// children lists the children of a process.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// processesOf lists the live (not zombie) processes running the
// executable at path.
func processesOf(path string) []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != path {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// reapOrphans reaps the zombie children of this process named comm:
// plugins of a killed nrinetd, reparented to this child subreaper. Only
// processes this test never started itself are named so, so no
// exec.Cmd's Wait is robbed. It returns how many it reaped.
func reapOrphans(comm string) int {
	n := 0
	for _, pid := range children(os.Getpid()) {
		if p, ok := readProc(pid); ok && p.state == 'Z' && p.comm == comm {
			var ws unix.WaitStatus
			if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
				n++
			}
		}
	}
	return n
}
