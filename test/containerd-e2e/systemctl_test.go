package containerde2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// The runbook test (runbook_test.go) runs docs/install.md's commands as
// written, and they start, restart and inspect containerd with systemctl.
// This machine has no systemd as PID 1, so the test puts this program, the
// test binary run under the name systemctl, first on the commands' PATH.
// It does what those commands need of systemd, from the unit files the
// commands installed, and nothing else:
//
//   - daemon-reload: nothing (each start reads the unit file again);
//   - cat UNIT: the unit file systemd would use (unitSearchPath), as
//     "# <path>" and its content;
//   - start, restart, enable --now UNIT: stops the unit's main process,
//     runs ExecStartPre ("-" prefix: failure ignored) and starts ExecStart
//     with the unit's Environment in a session of its own, its output
//     appended to <state>/<unit>.log; with Type=notify it waits for
//     READY=1 on NOTIFY_SOCKET, as systemd does, and fails if the process
//     exits first;
//   - stop UNIT: SIGTERM to the main process only (KillMode=process, as
//     containerd.service sets: the shims and containers stay), SIGKILL
//     after stopTimeout;
//   - is-active UNIT.
//
// State (the main PID, the notify socket, logs) is in
// $NRINET_RUNBOOK_STATE. Anything else fails with a message saying so.
const (
	systemctlName    = "systemctl"
	runbookStateEnv  = "NRINET_RUNBOOK_STATE"
	unitReadyTimeout = 60 * time.Second
	unitStopTimeout  = 30 * time.Second
	systemctlStandIn = "systemctl (nrinet runbook test's stand-in for systemd)"
	unitFileNotFound = "Unit %s could not be found."
)

// unitSearchPath is systemd's unit search order for system units: an
// administrator's units, runtime units, then /usr/local's and the
// distribution's.
var unitSearchPath = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// systemctlMain is main for the test binary run as systemctl.
func systemctlMain(args []string) int {
	if err := systemctl(args, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", systemctlStandIn, err)
		return 1
	}
	return 0
}

func systemctl(args []string, stdout io.Writer) error {
	state := os.Getenv(runbookStateEnv)
	if state == "" {
		return fmt.Errorf("%s is not set", runbookStateEnv)
	}
	var verb string
	var units []string
	now := false
	for _, a := range args {
		switch {
		case a == "--now":
			now = true
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("option %s not supported", a)
		case verb == "":
			verb = a
		default:
			units = append(units, strings.TrimSuffix(a, ".service"))
		}
	}
	if verb == "daemon-reload" {
		return nil
	}
	if len(units) == 0 {
		return fmt.Errorf("%q: no unit named", verb)
	}
	for _, u := range units {
		var err error
		switch verb {
		case "cat":
			err = catUnit(u, stdout)
		case "start", "restart":
			if err = stopUnit(state, u); err == nil {
				err = startUnit(state, u)
			}
		case "enable":
			if now {
				err = startUnit(state, u)
			}
		case "stop":
			err = stopUnit(state, u)
		case "is-active":
			if pid := mainPID(state, u); pid > 0 && !exited(pid) {
				fmt.Fprintln(stdout, "active")
			} else {
				fmt.Fprintln(stdout, "inactive")
				err = fmt.Errorf("%s is not active", u)
			}
		default:
			err = fmt.Errorf("%q not supported", verb)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// findUnit returns the path of unit's file, first in unitSearchPath.
func findUnit(unit string) (string, error) {
	for _, d := range unitSearchPath {
		p := filepath.Join(d, unit+".service")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf(unitFileNotFound, unit+".service")
}

func catUnit(unit string, w io.Writer) error {
	p, err := findUnit(unit)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "# %s\n%s", p, b)
	return err
}

// serviceUnit is what the stand-in reads of a unit's [Service] section.
type serviceUnit struct {
	path         string
	execStartPre []string
	execStart    string
	environment  []string
	notify       bool
}

func readUnit(unit string) (serviceUnit, error) {
	p, err := findUnit(unit)
	if err != nil {
		return serviceUnit{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return serviceUnit{}, err
	}
	defer f.Close()
	u := serviceUnit{path: p}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return u, fmt.Errorf("%s: %q is not key=value", p, line)
		}
		switch key {
		case "ExecStartPre":
			u.execStartPre = append(u.execStartPre, value)
		case "ExecStart":
			u.execStart = value
		case "Environment":
			// Space-separated assignments, each optionally in double
			// quotes.
			for _, a := range strings.Fields(value) {
				u.environment = append(u.environment, strings.Trim(a, `"`))
			}
		case "Type":
			u.notify = value == "notify"
		}
	}
	if err := sc.Err(); err != nil {
		return u, err
	}
	if u.execStart == "" {
		return u, fmt.Errorf("%s has no ExecStart", p)
	}
	return u, nil
}

func pidFile(state, unit string) string { return filepath.Join(state, unit+".pid") }

func mainPID(state, unit string) int {
	b, err := os.ReadFile(pidFile(state, unit))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// stopUnit stops the unit's main process, if it runs.
func stopUnit(state, unit string) error {
	pid := mainPID(state, unit)
	if pid <= 0 || exited(pid) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (PID %d): %w", unit, pid, err)
	}
	// SIGKILL after each unitStopTimeout the process is still there.
	for testutil.Poll(unitStopTimeout, 20*time.Millisecond, testutil.Until(unit+" to exit", func() bool { return exited(pid) })) != nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return os.Remove(pidFile(state, unit))
}

// startUnit runs the unit's ExecStartPre commands and starts ExecStart.
func startUnit(state, unit string) error {
	u, err := readUnit(unit)
	if err != nil {
		return err
	}
	env := append(os.Environ(), u.environment...)
	for _, pre := range u.execStartPre {
		ignore := strings.HasPrefix(pre, "-")
		f := strings.Fields(strings.TrimPrefix(pre, "-"))
		cmd := exec.Command(f[0], f[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil && !ignore {
			return fmt.Errorf("%s: ExecStartPre %s: %v\n%s", unit, pre, err, out)
		}
	}
	log, err := os.OpenFile(filepath.Join(state, unit+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	var notify *net.UnixConn
	if u.notify {
		sock := filepath.Join(state, unit+".notify")
		os.Remove(sock)
		if notify, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"}); err != nil {
			return err
		}
		defer notify.Close()
		env = append(env, "NOTIFY_SOCKET="+sock)
	}
	f := strings.Fields(u.execStart)
	cmd := exec.Command(f[0], f[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: ExecStart %s: %w", unit, u.execStart, err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(pidFile(state, unit), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	exitedCh := make(chan error, 1)
	go func() { exitedCh <- cmd.Wait() }()
	if notify == nil {
		return nil
	}
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				if l == "READY=1" {
					ready <- nil
					return
				}
			}
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("%s: notify socket: %w", unit, err)
		}
		// The main process outlives this command: it is not waited for,
		// as systemd's services are not the systemctl's that started
		// them.
		return nil
	case err := <-exitedCh:
		return fmt.Errorf("%s: %s exited before it said READY=1: %v (log: %s)", unit, u.execStart, err, log.Name())
	case <-time.After(unitReadyTimeout):
		return fmt.Errorf("%s: no READY=1 within %v (log: %s)", unit, unitReadyTimeout, log.Name())
	}
}
