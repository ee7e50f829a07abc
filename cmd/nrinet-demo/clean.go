package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/nftables"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// stateFile, in the demo's directory, says what a demo run with -keep
// left running, for -clean.
const stateFile = "demo.json"

// keptState is stateFile's content.
type keptState struct {
	PID          int      `json:"pid"` // nrinetd's
	Nrinetd      string   `json:"nrinetd"`
	Crictl       string   `json:"crictl"`
	CRISocket    string   `json:"criSocket"`
	Config       string   `json:"config"`
	TablesBefore []string `json:"tablesBefore"`
}

// keepState writes stateFile and a copy of the demo's own executable
// (go run's is removed when the demo exits) into the demo's directory,
// and returns the copy's path.
func (d *demo) keepState() (string, error) {
	b, _ := json.MarshalIndent(keptState{
		PID: d.daemon.Process.Pid, Nrinetd: d.bin["nrinetd"], Crictl: d.crictl,
		CRISocket: d.criSock, Config: d.conf, TablesBefore: d.tablesBefore,
	}, "", "  ")
	if err := os.WriteFile(filepath.Join(d.dir, stateFile), b, 0o644); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	self := filepath.Join(d.dir, "bin", "nrinet-demo")
	return self, copyFile(exe, self)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// keptRun is what a demo run with -keep left, read by readKept.
type keptRun struct {
	dir string
	st  keptState
}

// readKept reads the state a demo run with -keep left in dir, the value
// of -clean; errors are usage errors naming -clean and dir.
func readKept(dir string) (*keptRun, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, cli.FileError("clean", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(abs, stateFile))
	if err != nil {
		return nil, cli.FileError("clean", dir, fmt.Errorf("not the directory of a demo run with -keep: %w", err))
	}
	k := &keptRun{dir: abs}
	if err := json.Unmarshal(b, &k.st); err != nil {
		return nil, cli.FileError("clean", dir, fmt.Errorf("%s: %w", stateFile, err))
	}
	return k, nil
}

// clean removes what the demo run with -keep left in and around its
// directory. A kept nrinetd that is no longer running is started again,
// so that it removes its pods (and their network namespaces) itself.
func (k *keptRun) clean() error {
	st := k.st
	d := &demo{dir: k.dir, bin: map[string]string{"nrinetd": st.Nrinetd}, crictl: st.Crictl,
		criSock: st.CRISocket, conf: st.Config, tablesBefore: st.TablesBefore}
	if running(st.PID, st.Nrinetd) {
		d.keptPID = st.PID
	} else if err := d.startDaemon(); err != nil {
		return fmt.Errorf("starting the kept nrinetd again, to remove its pods: %w", err)
	}
	return d.cleanup()
}

// running is whether pid is a process of the executable exe.
func running(pid int, exe string) bool {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && p == exe
}

// cleanup removes everything the demo created, by exact name: its pods
// (through nrinetd, which removes their network namespaces and
// addresses), nrinetd, the bridge, the nftables tables of nri-podnet's
// that were not there before, and the directory.
func (d *demo) cleanup() error {
	var errs []error
	if d.daemon != nil || d.keptPID != 0 {
		if out, err := d.crictlCmd("pods", "-q"); err == nil {
			for _, id := range strings.Fields(out) {
				if !slices.Contains(d.pods, id) {
					d.pods = append(d.pods, id)
				}
			}
		} else {
			errs = append(errs, err)
		}
		for _, id := range d.pods {
			if _, err := d.crictlCmd("stopp", id); err != nil {
				errs = append(errs, err)
			}
			if _, err := d.crictlCmd("rmp", id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, d.stopDaemon())
	for _, id := range d.pods {
		// What nrinetd could not remove (cri.NetNSDir's names).
		if ns := "nrinet-" + id[:min(12, len(id))]; exists(filepath.Join("/run/netns", ns)) {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", ns, err, out))
			}
		}
	}
	if exists(filepath.Join("/sys/class/net", bridge, "bridge")) {
		if out, err := exec.Command("ip", "link", "del", "dev", bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", bridge, err, out))
		}
	}
	errs = append(errs, d.removeTables())
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	return errors.Join(errs...)
}

// stopDaemon stops nrinetd (SIGTERM, then SIGKILL after 15 s).
func (d *demo) stopDaemon() error {
	switch {
	case d.daemon != nil:
		d.daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
			d.daemon.Process.Kill()
			<-d.exited
		}
	case d.keptPID != 0:
		// Not the demo's child: watch /proc until it is gone.
		gone := func(context.Context) (bool, error) { return !running(d.keptPID, d.bin["nrinetd"]), nil }
		syscall.Kill(d.keptPID, syscall.SIGTERM)
		if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, gone) != nil {
			syscall.Kill(d.keptPID, syscall.SIGKILL)
			wait.PollUntilContextCancel(context.Background(), 50*time.Millisecond, true, gone)
		}
	}
	return nil
}

// podnetTableNames are the tables nri-podnet may create, as "family name".
var podnetTableNames = []string{"inet " + masq.TableName, "inet " + netpol.TableName, "inet " + hostport.TableName, "bridge " + portsec.TableName(bridge)}

var familyNames = map[nftables.TableFamily]string{nftables.TableFamilyINet: "inet", nftables.TableFamilyBridge: "bridge"}

// podnetTables returns which of podnetTableNames are there.
func podnetTables() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	tables, err := c.ListTables()
	if err != nil {
		return nil, fmt.Errorf("nftables: listing tables: %w", err)
	}
	var there []string
	for _, t := range tables {
		if name := familyNames[t.Family] + " " + t.Name; slices.Contains(podnetTableNames, name) {
			there = append(there, name)
		}
	}
	return there, nil
}

// removeTables deletes the nri-podnet tables the demo made.
func (d *demo) removeTables() error {
	there, err := podnetTables()
	if err != nil {
		return err
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	var del []string
	for _, name := range there {
		if !slices.Contains(d.tablesBefore, name) {
			family, table, _ := strings.Cut(name, " ")
			for f, n := range familyNames {
				if n == family {
					c.DelTable(&nftables.Table{Family: f, Name: table})
				}
			}
			del = append(del, name)
		}
	}
	if len(del) == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: deleting %s: %w", strings.Join(del, ", "), err)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
