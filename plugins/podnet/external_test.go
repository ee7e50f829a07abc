package podnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/runtime"
)

// extEnv is nri-podnet started by hand (as an operator would) against a
// runtime's socket in a temp dir. The runtime can be restarted and the
// plugin process killed and started again.
type extEnv struct {
	t       *testing.T
	dir     string
	sock    string
	cfgFile string
	cfg     podnet.Config
	netPfx  string
	rtLogs  *logBuffer

	mu   sync.Mutex
	pods map[string]*api.PodSandbox // what the runtime's SyncFunc reports

	rt   *runtime.Runtime
	proc *pluginProc
}

// pluginProc is one nri-podnet process.
type pluginProc struct {
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{} // closed when it exited
	err    error         // why, once exited is closed
}

// newExtEnv writes a configuration with a unique bridge and an IPv4 subnet
// of 198.19.0.0/16; nothing is started yet.
func newExtEnv(t *testing.T) *extEnv {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	dir, err := os.MkdirTemp("", "nrp-ext-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	x := 1 + int(randHex(1)[0])%250
	e := &extEnv{
		t: t, dir: dir, sock: filepath.Join(dir, "nri.sock"), cfgFile: filepath.Join(dir, "podnet.json"),
		netPfx: "nrx" + randHex(3), rtLogs: &logBuffer{}, pods: map[string]*api.PodSandbox{},
	}
	e.cfg = podnet.Config{
		Bridge:   "nrxb" + randHex(4),
		Subnets:  []string{netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", x)).String()},
		MTU:      1400,
		StateDir: filepath.Join(dir, "state"),
	}
	b, _ := json.Marshal(e.cfg)
	if err := os.WriteFile(e.cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after the plugin and the runtime
	// are gone.
	t.Cleanup(func() { testutil.DeleteLink(e.cfg.Bridge) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runtime logs:\n%s", e.rtLogs)
			if e.proc != nil {
				t.Logf("plugin logs:\n%s", e.proc.logs)
			}
		}
	})
	return e
}

// startRuntime starts a runtime on the socket that requires podnet and
// reports e.pods in Synchronize.
func (e *extEnv) startRuntime() {
	e.t.Helper()
	rt, err := runtime.New("podnet-ext-test", "v0",
		runtime.WithSocketPath(e.sock), runtime.WithPluginPath(""),
		runtime.WithRequiredNetworkPlugins("podnet"),
		runtime.WithRequestTimeout(15*time.Second),
		runtime.WithLogger(slog.New(slog.NewTextHandler(e.rtLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			var pods []*api.PodSandbox
			for _, p := range e.pods {
				pods = append(pods, p)
			}
			return pods, nil, nil
		}))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.rt = rt
	e.t.Cleanup(e.stopRuntime)
}

// stopRuntime stops the runtime, which sends the plugin Shutdown and
// closes its connection.
func (e *extEnv) stopRuntime() {
	if e.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.rt.Stop(ctx)
	e.rt = nil
}

// startPlugin starts nri-podnet with the configuration file and the
// runtime's socket. It is killed, by PID, when the test ends.
func (e *extEnv) startPlugin() *pluginProc {
	e.t.Helper()
	p := &pluginProc{logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, "-config", e.cfgFile, "-socket", e.sock, "-verbose")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	e.t.Cleanup(func() { p.kill() })
	e.proc = p
	return p
}

// kill kills the process with SIGKILL and waits until it is gone.
func (p *pluginProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// waitJoined waits until the runtime lists 10-podnet, failing at once if
// the plugin process exits.
func (e *extEnv) waitJoined(what string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, p := range e.rt.Plugins() {
			if p.Name == "10-podnet" {
				return
			}
		}
		select {
		case <-e.proc.exited:
			e.t.Fatalf("%s: nri-podnet exited (%v) instead of joining", what, e.proc.err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: nri-podnet did not join in time", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNRIPodnet_RejoinsRestartedRuntime: nri-podnet started by hand stays
// up when the runtime stops and joins the runtime that starts next on the
// same socket, which synchronizes it again.
func TestNRIPodnet_RejoinsRestartedRuntime(t *testing.T) {
	e := newExtEnv(t)
	e.startRuntime()
	e.startPlugin()
	e.waitJoined("first runtime")
	e.stopRuntime()
	e.startRuntime()
	e.waitJoined("restarted runtime")
}
