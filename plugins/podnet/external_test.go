package podnet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	t.Cleanup(func() { deleteBridge(e.cfg.Bridge) })
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

// startPlugin starts nri-podnet with the configuration file, the
// runtime's socket and extra arguments. It is killed, by PID, when the
// test ends.
func (e *extEnv) startPlugin(extra ...string) *pluginProc {
	e.t.Helper()
	p := &pluginProc{logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, append([]string{"-config", e.cfgFile, "-socket", e.sock, "-verbose"}, extra...)...)
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
	if err := testutil.Poll(20*time.Second, 10*time.Millisecond, func() error {
		for _, p := range e.rt.Plugins() {
			if p.Name == "10-podnet" {
				return nil
			}
		}
		select {
		case <-e.proc.exited:
			return testutil.Abort(fmt.Errorf("nri-podnet exited (%v) instead of joining", e.proc.err))
		default:
		}
		return errors.New("waiting for nri-podnet to join")
	}); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// TestNRIPodnet_RejoinsRestartedRuntime: nri-podnet started by hand stays
// up when the runtime stops and joins the runtime that starts next on the
// same socket, which synchronizes it again: a pod removed while the
// runtime was down loses its address and veth, the other keeps them.
func TestNRIPodnet_RejoinsRestartedRuntime(t *testing.T) {
	e := newExtEnv(t)
	e.startRuntime()
	e.startPlugin()
	e.waitJoined("first runtime")
	keep, _, keepRec := e.runPod(1)
	gone, _, goneRec := e.runPod(2)
	e.stopRuntime()
	e.mu.Lock()
	delete(e.pods, gone.Id) // its namespace stays, and so would its veth
	e.mu.Unlock()
	e.startRuntime()
	e.waitJoined("restarted runtime")

	veth := func(rec *api.PodNetworkRecord) string { return rec.GetNetwork().GetInfo()[podnet.InfoHostVeth] }
	if testutil.LinkExists(veth(goneRec)) {
		t.Errorf("host veth %q of the pod removed while the runtime was down is still there", veth(goneRec))
	}
	st, err := e.rt.PodSandboxStatus(context.Background(), keep, keepRec, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.GetNetwork().GetIps(), keepRec.GetNetwork().GetIps(); !slices.Equal(got, want) || !testutil.LinkExists(veth(keepRec)) {
		t.Errorf("remaining pod: ips %v (want %v), host veth %q present: %v", got, want, veth(keepRec), testutil.LinkExists(veth(keepRec)))
	}
	e.proc.kill() // to read its allocator
	if got := e.owners(); !slices.Equal(got, []string{keep.Id}) {
		t.Errorf("allocations = %v, want only %s", got, keep.Id)
	}
}

// runPod runs a pod with a new network namespace through the runtime and
// adds it to what the runtime reports in Synchronize.
func (e *extEnv) runPod(i int) (*api.PodSandbox, string, *api.PodNetworkRecord) {
	e.t.Helper()
	ns := fmt.Sprintf("%s-%d", e.netPfx, i)
	path := testutil.NewNetNS(e.t, ns)
	pod := &api.PodSandbox{
		Id: fmt.Sprintf("pod-%s-%d", e.netPfx, i), Name: fmt.Sprintf("web-%d", i), Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: path}}},
	}
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		e.t.Fatalf("RunPodSandbox %s: %v", pod.Id, err)
	}
	e.mu.Lock()
	e.pods[pod.Id] = pod
	e.mu.Unlock()
	return pod, ns, rec
}

// removePod stops and removes a pod through the runtime and drops it from
// what the runtime reports.
func (e *extEnv) removePod(pod *api.PodSandbox) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
		e.t.Fatalf("StopPodSandbox %s: %v", pod.Id, err)
	}
	if err := e.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
		e.t.Fatalf("RemovePodSandbox %s: %v", pod.Id, err)
	}
	e.mu.Lock()
	delete(e.pods, pod.Id)
	e.mu.Unlock()
}

// owners lists the pods holding addresses in the plugin's allocator. The
// plugin must not be running (it holds the database's lock).
func (e *extEnv) owners() []string {
	e.t.Helper()
	return allocationOwners(e.t, e.cfg)
}

// TestPodnet_ReleasesPodsRemovedWhileAway: nri-podnet is killed; pods are
// stopped and removed through the runtime while it is away (one with its
// network namespace deleted, as a runtime does, one whose namespace is
// still held open, so that its host veth stays); when the plugin is back
// and synchronized, those pods' addresses and host veths are gone, and
// the pod that still exists keeps its own.
func TestPodnet_ReleasesPodsRemovedWhileAway(t *testing.T) {
	e := newExtEnv(t)
	e.startRuntime()
	e.startPlugin()
	e.waitJoined("first start")
	keep, keepNS, keepRec := e.runPod(1)
	goneNSDeleted, goneNS, goneRec := e.runPod(2)
	goneNSHeld, _, heldRec := e.runPod(3)
	veth := func(rec *api.PodNetworkRecord) string { return rec.GetNetwork().GetInfo()[podnet.InfoHostVeth] }
	for _, rec := range []*api.PodNetworkRecord{keepRec, goneRec, heldRec} {
		if !testutil.LinkExists(veth(rec)) {
			t.Fatalf("host veth %q missing after RunPodSandbox", veth(rec))
		}
	}

	e.proc.kill()
	testutil.WaitFor(t, "the runtime to drop the killed plugin", 10*time.Second, func() bool {
		ready, _ := e.rt.NetworkReady()
		return !ready
	})
	e.removePod(goneNSDeleted)
	testutil.DeleteNetNS(goneNS)
	e.removePod(goneNSHeld) // its namespace stays: nobody deletes its host veth but the plugin
	if !testutil.LinkExists(veth(heldRec)) {
		t.Fatalf("host veth %q of a pod whose namespace still exists is gone before the plugin came back", veth(heldRec))
	}

	e.startPlugin()
	e.waitJoined("after the restart")
	for _, rec := range []*api.PodNetworkRecord{goneRec, heldRec} {
		testutil.WaitFor(t, "host veth "+veth(rec)+" of a removed pod to go", 10*time.Second, func() bool { return !testutil.LinkExists(veth(rec)) })
	}
	if !testutil.LinkExists(veth(keepRec)) {
		t.Errorf("host veth %q of the pod that still exists is gone", veth(keepRec))
	}
	st, err := e.rt.PodSandboxStatus(context.Background(), keep, keepRec, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.GetNetwork().GetIps(), keepRec.GetNetwork().GetIps(); !slices.Equal(got, want) || st.GetNetwork().GetInfo()[podnet.InfoCheck] != "ok" {
		t.Errorf("status of the remaining pod: ips %v (want %v), check %q", got, want, st.GetNetwork().GetInfo()[podnet.InfoCheck])
	}
	if got, want := testutil.PodAddrs(t, keepNS), keepRec.GetNetwork().GetIps(); !slices.Equal(got, want) {
		t.Errorf("eth0 of the remaining pod has %v, want %v", got, want)
	}

	e.proc.kill() // to read its allocator
	if got := e.owners(); !slices.Equal(got, []string{keep.Id}) {
		t.Errorf("allocations after the plugin came back = %v, want only %s", got, keep.Id)
	}
}

// TestPodnet_SynchronizeDeletesStrayVeths: a host veth of nri-podnet's
// naming on its bridge that belongs to no existing pod (left behind when
// the plugin was killed after releasing a pod's addresses and before
// deleting its veth, while the pod's namespace lives on) is deleted at
// Synchronize. Other ports of the bridge are left alone.
func TestPodnet_SynchronizeDeletesStrayVeths(t *testing.T) {
	e := newExtEnv(t)
	e.startRuntime()
	e.startPlugin()
	e.waitJoined("first start")
	_, _, keepRec := e.runPod(1)
	e.proc.kill()

	stray, foreign := "nrp"+randHex(6), "nrpfor"+randHex(2)
	for _, name := range []string{stray, foreign} {
		t.Cleanup(func() { deleteBridge(name) })
		ns := e.netPfx + "-" + name
		testutil.NewNetNS(t, ns)
		testutil.Run(t, "ip", "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", ns)
		testutil.Run(t, "ip", "link", "set", name, "master", e.cfg.Bridge, "up")
	}

	e.startPlugin()
	e.waitJoined("after the restart")
	if testutil.LinkExists(stray) {
		t.Errorf("stray host veth %s is still there", stray)
	}
	keep := keepRec.GetNetwork().GetInfo()[podnet.InfoHostVeth]
	for _, name := range []string{foreign, keep} {
		if !testutil.LinkExists(name) {
			t.Errorf("%s was deleted", name)
		}
	}
}

// TestNRIPodnet_ByHandNeedsConfig: only a launched plugin gets its
// configuration from the runtime, so nri-podnet started by hand without
// -config exits at once saying so, instead of trying to join forever.
func TestNRIPodnet_ByHandNeedsConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "-socket", filepath.Join(t.TempDir(), "none.sock")).CombinedOutput()
	if _, exited := err.(*exec.ExitError); !exited || ctx.Err() != nil || !strings.Contains(string(out), "-config") {
		t.Fatalf("nri-podnet without -config: %v\n%s\nwant a prompt exit with an error naming -config", err, out)
	}
}
