package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// Tests for the defects of the hardening issue, each reproduced first.

// bigPod returns a pod whose labels take about size bytes, in labels of
// labelSize bytes each.
func bigPod(n, size, labelSize int) *api.PodSandbox {
	pod := netPod(n)
	pod.Labels = map[string]string{}
	v := strings.Repeat("v", labelSize)
	for i := 0; i*(labelSize+16) < size; i++ {
		pod.Labels[fmt.Sprintf("label-%07d", i)] = v
	}
	return pod
}

// TestHardening_BigPodsDoNotStopPluginsJoining: a pod larger than the
// Synchronize chunk size, and one with 100,000 small labels, both
// accepted by RunPodSandbox, must not keep a plugin from joining later.
func TestHardening_BigPodsDoNotStopPluginsJoining(t *testing.T) {
	big := bigPod(1, 1536<<10, 1024) // 1.5 MiB of labels
	many := bigPod(2, 0, 1)
	for i := range 100_000 {
		many.Labels[fmt.Sprintf("l%06d", i)] = "x"
	}
	for _, pod := range []*api.PodSandbox{big, many} {
		if err := api.CheckPodSize(pod); err != nil {
			t.Fatalf("test pod too large for the runtime: %v", err)
		}
	}
	pods := []*api.PodSandbox{netPod(3), big, netPod(4), many}
	e := newEnv(t, runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return pods, nil, nil
	}))
	for _, pod := range pods {
		if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatalf("RunPodSandbox of %s: %v", pod.GetId(), err)
		}
	}
	rec := newRecorder()
	e.startPlugin(rec, "10", "late")
	if n, _ := rec.synced(); n != len(pods) {
		t.Errorf("plugin synchronized %d pods, want %d", n, len(pods))
	}
}

// TestHardening_OversizedObjectsRefusedAtTheDoor: a pod or container the
// runtime could never send to a plugin is refused by RunPodSandbox and
// CreateContainer with an error naming the size and the limit.
func TestHardening_OversizedObjectsRefusedAtTheDoor(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	e.startPlugin(rec, "10", "rec")
	huge := bigPod(1, 3<<20, 4096)
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: huge})
	if !errors.Is(err, api.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(api.MaxObjectSize)) {
		t.Fatalf("RunPodSandbox of a 3 MiB pod = %v, want an error wrapping api.ErrTooLarge naming the limit", err)
	}
	pod := testPod(2)
	ctr := testContainer(pod, 1)
	ctr.Env = []string{"BIG=" + strings.Repeat("x", 3<<20)}
	_, err = e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if !errors.Is(err, api.ErrTooLarge) {
		t.Fatalf("CreateContainer of a 3 MiB container = %v, want api.ErrTooLarge", err)
	}
	if got := rec.seen(); len(got) != 0 {
		t.Errorf("plugin saw %v for refused objects", got)
	}
}

// TestHardening_LaunchedPluginIsRestarted: a pre-installed network plugin
// that dies is launched again, and NetworkReady comes back.
func TestHardening_LaunchedPluginIsRestarted(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	for _, d := range []string{pluginDir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(pluginDir, "10-netplug")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "netplug.conf"), pj(v4net("198.18.0.5")), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	e := newEnv(t, runtime.WithPluginPath(pluginDir), runtime.WithPluginConfigPath(confDir),
		runtime.WithRequiredNetworkPlugins("netplug"), runtime.WithObserver(obs),
		runtime.WithRestartBackoff(10*time.Millisecond, 100*time.Millisecond))
	if ready, why := e.rt.NetworkReady(); !ready {
		t.Fatalf("network not ready after start: %s", why)
	}
	first := e.rt.Plugins()[0].Pid
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to be launched again", func() bool {
		ps := e.rt.Plugins()
		return len(ps) == 1 && ps[0].Pid != first
	})
	if ready, why := e.rt.NetworkReady(); !ready {
		t.Fatalf("network not ready after the restart: %s", why)
	}
	if got := e.rt.Plugins()[0].Restarts; got != 1 {
		t.Errorf("PluginInfo.Restarts = %d, want 1", got)
	}
	obs.mu.Lock()
	if fmt.Sprint(obs.restarts) != "[10-netplug]" {
		t.Errorf("observer saw restarts %v, want one of 10-netplug", obs.restarts)
	}
	obs.mu.Unlock()
	if !strings.Contains(e.logs.String(), "plugin exited; restarting it") {
		t.Errorf("the restart was not logged:\n%s", e.logs)
	}
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
	if err != nil || rec.GetNetwork().GetIps()[0] != "198.18.0.5" {
		t.Fatalf("RunPodSandbox after the restart = %v, %v", rec, err)
	}
}

// TestHardening_StatusDeadlineHoldsWithFrozenPlugin: a plugin that stopped
// reading (SIGSTOP) fills its socket buffer; a status round must still
// answer by its deadline instead of waiting in ttrpc's send until the
// write timeout breaks the connection.
func TestHardening_StatusDeadlineHoldsWithFrozenPlugin(t *testing.T) {
	const (
		statusTimeout = 100 * time.Millisecond
		writeTimeout  = 4 * time.Second // the request timeout bounds writes
	)
	e := newEnv(t, runtime.WithStatusTimeout(statusTimeout), runtime.WithRequestTimeout(writeTimeout), runtime.WithStatusCacheTTL(0))
	p := e.startNetPlugin(netScript{Name: "frozen", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := bigPod(1, 256<<10, 1024) // each request carries 256 KiB
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	var worst time.Duration
	for range 12 { // 3 MiB: more than the socket buffers hold
		start := time.Now()
		rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
		worst = max(worst, time.Since(start))
		if err != nil || rec.GetNetwork().GetIps()[0] != "198.18.0.5" {
			t.Fatalf("PodSandboxStatus = %v, %v; want the stored network", rec, err)
		}
	}
	// Generous: the deadline is 100 ms; waiting for the write timeout
	// would take 4 s.
	if worst > writeTimeout/2 {
		t.Errorf("a status round took %v with a %v deadline", worst, statusTimeout)
	}
}

// gate is a plugin whose RunPodSandbox blocks until released.
type gate struct {
	entered chan string
	release chan struct{}
}

func (g *gate) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	g.entered <- pod.GetId()
	<-g.release
	return nil
}

func (g *gate) StopPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// configured tells when a plugin has been configured.
type configured struct {
	*recorder
	done chan struct{}
}

func (c *configured) Configure(context.Context, string, string, string) (api.EventMask, error) {
	close(c.done)
	return 0, nil
}

// TestHardening_JoiningPluginDoesNotStallRequests: while one plugin is
// slow on a request and another one joins, a request for an unrelated pod
// must not wait for the slow one.
func TestHardening_JoiningPluginDoesNotStallRequests(t *testing.T) {
	e := newEnv(t, runtime.WithRequestTimeout(30*time.Second))
	g := &gate{entered: make(chan string, 1), release: make(chan struct{})}
	e.startPlugin(g, "10", "slow")
	released := false
	defer func() {
		if !released {
			close(g.release)
		}
	}()
	runDone := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
		runDone <- err
	}()
	<-g.entered // pod 1 is now held by the slow plugin

	joiner := &configured{recorder: newRecorder(), done: make(chan struct{})}
	s, err := plugin.New(joiner, plugin.WithPluginName("joiner"), plugin.WithPluginIdx("20"),
		plugin.WithSocketPath(e.sock), plugin.WithEnv(func(string) string { return "" }, "test"))
	if err != nil {
		t.Fatal(err)
	}
	startErr := make(chan error, 1)
	go func() { startErr <- s.Start(context.Background()) }()
	t.Cleanup(s.Stop)
	<-joiner.done // the joiner is about to synchronize

	// Requests for other pods go on, for as long as we look.
	deadline := time.Now().Add(300 * time.Millisecond)
	for n := 2; time.Now().Before(deadline); n++ {
		done := make(chan error, 1)
		go func() {
			done <- e.rt.StopPodSandbox(context.Background(), &api.StopPodSandboxRequest{Pod: testPod(n)})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("StopPodSandbox of pod %d waited behind the slow plugin and the joining one", n)
		}
	}
	close(g.release)
	released = true
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if err := <-startErr; err != nil {
		t.Fatal(err)
	}
}

// netHandler is an in-process network plugin returning a fixed network.
type netHandler struct{ net *api.PodSandboxNetwork }

func (h netHandler) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return h.net, nil
}

func (h netHandler) PodSandboxStatus(context.Context, *api.PodSandbox, bool) (*api.PodSandboxNetwork, error) {
	return h.net, nil
}

// TestHardening_EmptyUpdateDoesNotErase: an UpdatePodSandboxNetwork with an
// empty or nil network must not silently erase the plugin's part.
func TestHardening_EmptyUpdateDoesNotErase(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  *api.PodSandboxNetwork
	}{
		{"nil", nil},
		{"empty", &api.PodSandboxNetwork{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			e := newEnv(t, runtime.WithPodNetworkStore(store))
			s := e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "net")
			pod := netPod(1)
			rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
			if err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			store.recs[pod.GetId()] = rec
			store.mu.Unlock()
			err = s.UpdatePodSandboxNetwork(context.Background(), pod.GetId(), tc.net)
			if err == nil {
				t.Errorf("an %s update was accepted", tc.name)
			}
			got, _ := store.PodNetwork(context.Background(), pod.GetId())
			if ips := got.GetNetwork().GetIps(); len(ips) != 1 || ips[0] != "198.18.0.5" {
				t.Errorf("after an %s update the pod's addresses are %v", tc.name, ips)
			}
		})
	}
}

// TestHardening_WithdrawRemovesThePart: the explicit way to erase a
// plugin's part of a pod's network.
func TestHardening_WithdrawRemovesThePart(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "v4")
	v6 := e.startPlugin(netHandler{&api.PodSandboxNetwork{Ips: []string{"fd00:198:18::5"}}}, "20", "v6")
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()
	if err := v6.WithdrawPodSandboxNetwork(context.Background(), pod.GetId()); err != nil {
		t.Fatal(err)
	}
	got, _ := store.PodNetwork(context.Background(), pod.GetId())
	if ips := got.GetNetwork().GetIps(); len(ips) != 1 || ips[0] != "198.18.0.5" {
		t.Errorf("after the withdrawal the pod's addresses are %v, want the other plugin's", ips)
	}
	if _, ok := got.GetPlugins()["20-v6"]; ok || got.GetOwners()[api.OwnerIPv6] != "" {
		t.Errorf("the withdrawn part is still recorded: %v", got)
	}
}

// TestHardening_RequiredPluginMustProvideAnAddress: a connected required
// network plugin that returns no address does not make a pod networked.
func TestHardening_RequiredPluginMustProvideAnAddress(t *testing.T) {
	e := newEnv(t, runtime.WithRequiredNetworkPlugins("podnet"))
	e.startPlugin(netHandler{nil}, "99", "podnet")
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
	if err == nil {
		t.Fatal("a pod was created without an address although its required network plugin gave none")
	}
}

// TestHardening_RequiredNameMatchesExactly: "10-podnet" is matched by the
// plugin of that full name only, not by one registered under the name
// "10-podnet" at another index.
func TestHardening_RequiredNameMatchesExactly(t *testing.T) {
	e := newEnv(t, runtime.WithRequiredNetworkPlugins("10-podnet"))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "99", "10-podnet")
	if ready, _ := e.rt.NetworkReady(); ready {
		t.Fatal(`plugin "99-10-podnet" satisfied the required network plugin "10-podnet"`)
	}
}

// heapAfterGC returns the live heap.
func heapAfterGC() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHardening_NoMemoryPerPodEverCreated: creating and removing 50,000
// pods leaves the heap flat.
func TestHardening_NoMemoryPerPodEverCreated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cycle := func(from, to int) {
		for n := from; n < to; n++ {
			pod := testPod(n)
			if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.rt.PodSandboxStatus(ctx, pod, &api.PodNetworkRecord{}, false); err != nil {
				t.Fatal(err)
			}
			if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			if err := e.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle(0, 10_000)
	before := heapAfterGC()
	cycle(10_000, 50_000)
	after := heapAfterGC()
	// 40,000 pods at ~100 bytes each would be 4 MB.
	if after > before+1<<20 {
		t.Errorf("heap grew from %d to %d bytes over 40,000 pods created and removed", before, after)
	}
}

// TestHardening_StopRacesNothing: Stop while status rounds refresh in the
// background, a plugin connects and a request runs; run with -race. Every
// goroutine the Runtime starts must be counted before Stop waits.
func TestHardening_StopRacesNothing(t *testing.T) {
	for range 20 {
		rt, err := runtime.New("test", "v1", runtime.WithoutExternalPlugins(), runtime.WithPluginPath(""),
			runtime.WithStatusCacheTTL(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pod := netPod(1)
		last := &api.PodNetworkRecord{Network: v4net("198.18.0.5")}
		rt.PodSandboxStatus(context.Background(), pod, last, false) // fills the cache
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					rt.PodSandboxStatus(context.Background(), pod, last, false)
				}
			})
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, b := net.Pipe()
				rt.Connect(context.Background(), a)
				b.Close()
			}
		})
		rt.Stop(context.Background())
		close(stop)
		wg.Wait()
	}
}

// TestHardening_SocketIsPrivateWhateverTheUmask: the NRI socket is 0600
// even when the process umask would leave it open to everyone.
func TestHardening_SocketIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri.sock")
	rt, err := runtime.New("test", "v1", runtime.WithSocketPath(sock), runtime.WithPluginPath(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode() & fs.ModePerm; perm != 0o600 {
		t.Errorf("socket mode = %v, want 0600", perm)
	}
}

// TestHardening_HangingPluginWarnsOnce: a plugin that hangs on every status
// round is reported, not once per pod per round.
func TestHardening_HangingPluginWarnsOnce(t *testing.T) {
	e := newEnv(t, runtime.WithStatusTimeout(20*time.Millisecond), runtime.WithStatusCacheTTL(0))
	e.startNetPlugin(netScript{Name: "hang", Idx: "10", Network: pj(v4net("198.18.0.5")), StatusSleep: time.Hour})
	var recs []*api.PodNetworkRecord
	for n := range 25 {
		rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(n)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for range 4 {
		for n, rec := range recs {
			if _, err := e.rt.PodSandboxStatus(context.Background(), netPod(n), rec, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	warns := 0
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "10-hang") {
			warns++
		}
	}
	if warns > 3 {
		t.Errorf("%d warnings about the hanging plugin for 100 status rounds", warns)
	}
}

// uidProbeEnv makes the test binary, run as another user, register a
// plugin on the socket it names and exit 0 if the runtime configured it.
const uidProbeEnv = "NRINET_TEST_UID_PROBE"

func uidProbeMain(sock string) {
	s, err := plugin.New(newRecorder(), plugin.WithPluginName("probe"), plugin.WithPluginIdx("50"),
		plugin.WithSocketPath(sock), plugin.WithEnv(func(string) string { return "" }, "probe"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.Start(ctx)
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.Stop()
}

// TestHardening_AllowedPluginUIDs: with WithAllowedPluginUIDs, a process
// of another user that can open the socket is turned away before it can
// register, and logged with its uid; root's plugins join.
func TestHardening_AllowedPluginUIDs(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	const nobody = 65534
	dir, err := os.MkdirTemp("", "nrinet-uid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "nri.sock")
	e := newEnvAt(t, sock, runtime.WithAllowedPluginUIDs(0))
	// Open the socket to everyone, as a careless administrator might.
	for _, p := range []string{dir, sock} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(probe)
	cmd.Env = []string{uidProbeEnv + "=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a plugin running as uid %d registered:\n%s", nobody, out)
	}
	if !strings.Contains(e.logs.String(), fmt.Sprintf("runs as uid %d", nobody)) {
		t.Errorf("the refused connection was not logged with its uid:\n%s", e.logs)
	}
	e.startPlugin(newRecorder(), "10", "root") // root may
}

// TestHardening_StatusWithBadRouteIsStale: a plugin whose status answer
// routes through an interface the pod does not have keeps its stored part,
// marked stale; the status call does not fail.
func TestHardening_StatusWithBadRouteIsStale(t *testing.T) {
	e := newEnv(t)
	good := &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24"}}}}
	bad := &api.PodSandboxNetwork{
		Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24"}}},
		Routes:     []*api.NetworkRoute{{Destination: "198.18.9.0/24", Interface: "eth9"}},
	}
	e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(good), StatusNetwork: pj(bad)})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	if err != nil {
		t.Fatalf("PodSandboxStatus failed because of a plugin's answer: %v", err)
	}
	if len(rec.GetNetwork().GetRoutes()) != 0 || !strings.Contains(rec.GetStale()["10-net"], `no interface "eth9"`) {
		t.Errorf("status = %v, want the stored part, 10-net stale for its route via eth9", rec)
	}
}
