package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/sdnotify"
)

// daemon is an nrinetd process with its own sockets, state, plugin and
// configuration directories, restarted as often as the chaos loop wants.
type daemon struct {
	dir, conf, criSock, nriSock, notifyPath string
	bridge, subnetV4, subnetV6              string
	podnetState                             string // nri-podnet's state directory (ipam.db)
	log                                     *os.File

	cmd    *exec.Cmd
	exited chan struct{}
	starts int // processes started
}

// newDaemon writes nrinetd's configuration and nri-podnet's into dir.
func newDaemon(dir string, log *os.File, bridge, subnetV4, subnetV6 string) (*daemon, error) {
	d := &daemon{
		dir: dir, conf: filepath.Join(dir, "nrinetd.toml"),
		criSock: filepath.Join(dir, "cri.sock"), nriSock: filepath.Join(dir, "nri.sock"),
		notifyPath: filepath.Join(dir, "notify.sock"),
		bridge:     bridge, subnetV4: subnetV4, subnetV6: subnetV6,
		podnetState: filepath.Join(dir, "podnet"),
		log:         log,
	}
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	for _, p := range []string{pluginDir, confDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	pc, _ := json.Marshal(map[string]any{
		"bridge": bridge, "subnets": []string{subnetV4, subnetV6}, "mtu": 1400, "stateDir": d.podnetState,
	})
	if err := os.WriteFile(filepath.Join(confDir, "10-podnet.conf"), pc, 0o644); err != nil {
		return nil, err
	}
	if err := os.Symlink(podnetBin, filepath.Join(pluginDir, "10-podnet")); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`cri_socket = %q
nri_socket = %q
plugin_dir = %q
plugin_config_dir = %q
state_dir = %q
required_network_plugins = ["podnet"]
http_address = ""
log_level = "info"
`, d.criSock, d.nriSock, pluginDir, confDir, filepath.Join(dir, "state"))
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return d, nil
}

// running reports whether nrinetd runs.
func (d *daemon) running() bool { return d.cmd != nil }

// pid is nrinetd's process ID, 0 when it does not run.
func (d *daemon) pid() int {
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// start runs nrinetd and waits until it sends READY=1 on its
// NOTIFY_SOCKET (its CRI socket then accepts connections).
func (d *daemon) start(patience time.Duration) error {
	ready, err := d.spawn()
	if err != nil {
		return err
	}
	cmd, exited := d.cmd, d.exited
	select {
	case <-ready:
		return nil
	case <-exited:
		d.cmd = nil
		return fmt.Errorf("nrinetd exited before it was ready: %v", cmd.ProcessState)
	case <-time.After(patience):
		d.kill()
		return fmt.Errorf("nrinetd was not ready within %v", patience)
	}
}

// spawn runs nrinetd; the channel it returns is closed when nrinetd sends
// READY=1.
func (d *daemon) spawn() (<-chan struct{}, error) {
	if d.cmd != nil {
		return nil, fmt.Errorf("nrinetd already runs (pid %d)", d.cmd.Process.Pid)
	}
	notify, err := sdnotify.Listen(d.notifyPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.log, "=== chaos: starting nrinetd at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(nrinetdBin, "-config", d.conf)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+d.notifyPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		notify.Close()
		return nil, err
	}
	exited := make(chan struct{})
	d.cmd, d.exited = cmd, exited
	d.starts++
	go func() {
		cmd.Wait()
		notify.Close()
		close(exited)
	}()
	return notify.Ready(), nil
}

// kill ends nrinetd with SIGKILL, as a crash would, and waits for it.
func (d *daemon) kill() {
	if d.cmd == nil {
		return
	}
	fmt.Fprintf(d.log, "=== chaos: SIGKILL nrinetd (pid %d) at %s\n", d.cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	d.cmd.Process.Kill()
	<-d.exited
	d.cmd = nil
}

// stop ends nrinetd with SIGTERM and returns an error unless it exits
// with status 0 within patience (it is killed then).
func (d *daemon) stop(patience time.Duration) error {
	if d.cmd == nil {
		return nil
	}
	cmd := d.cmd
	fmt.Fprintf(d.log, "=== chaos: SIGTERM nrinetd (pid %d) at %s\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		d.cmd = nil
	case <-time.After(patience):
		d.kill()
		return fmt.Errorf("nrinetd (pid %d) did not exit within %v of SIGTERM", cmd.Process.Pid, patience)
	}
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("nrinetd (pid %d) exited with %v after SIGTERM", cmd.Process.Pid, cmd.ProcessState)
	}
	return nil
}

// dial returns a CRI client of the daemon's socket that survives
// restarts: gRPC reconnects, waiting at most 500 ms between attempts.
func (d *daemon) dial() (*grpc.ClientConn, error) {
	bc := backoff.DefaultConfig
	bc.MaxDelay = 500 * time.Millisecond
	return grpc.NewClient("unix://"+d.criSock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: 2 * time.Second}))
}

// nriStatus is what the test reads of CRI Status's verbose "nri" info.
type nriStatus struct {
	NetworkReady bool   `json:"networkReady"`
	Reason       string `json:"reason"`
	Plugins      []struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
		Pid  int    `json:"pid"`
	} `json:"plugins"`
}

// joined reports whether the named plugin is in the list.
func (s nriStatus) joined(name string) bool {
	for _, p := range s.Plugins {
		if p.Name == name {
			return true
		}
	}
	return false
}

// nriState asks nrinetd for CRI Status, verbose, and decodes its "nri"
// info.
func nriState(ctx context.Context, c criapi.RuntimeServiceClient) (nriStatus, error) {
	var s nriStatus
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rsp, err := c.Status(ctx, &criapi.StatusRequest{Verbose: true})
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(rsp.GetInfo()["nri"]), &s); err != nil {
		return s, fmt.Errorf("decoding Status info %q: %w", rsp.GetInfo()["nri"], err)
	}
	return s, nil
}
