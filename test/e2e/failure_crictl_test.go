package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// The CNI network nri-cni runs as 20-cni in
// TestCrictl_ConflictingNetworkPlugins.
const (
	cniSubnet  = "198.18.221.0/24"
	cniNetName = "nrinet-e2e-cni"
)

// nri-cni is built on first use next to the binaries TestMain built, and
// removed with them.
var (
	nriCNIOnce sync.Once
	nriCNIPath string
	nriCNIErr  error
)

func nriCNIBin(t testing.TB) string {
	t.Helper()
	nriCNIOnce.Do(func() {
		bin := filepath.Join(filepath.Dir(nrinetdBin), "nri-cni")
		if err := testutil.GoBuild("", filepath.Dir(bin), nil, "github.com/nrinet/nrinet/cmd/nri-cni"); err != nil {
			nriCNIErr = err
			return
		}
		nriCNIPath = bin
	})
	if nriCNIErr != nil {
		t.Fatal(nriCNIErr)
	}
	return nriCNIPath
}

// cniNet is a CNI network with host-local IPAM over cniSubnet, run by
// nri-cni as the daemon's pre-installed plugin 20-cni, with its
// configuration, host-local data and libcni cache in the daemon's
// directory. With a bridge it is a bridge network (isGateway, no
// masquerading), which creates the pod's eth0; without, host-local is
// the only plugin of the list and returns an address but no interface.
type cniNet struct {
	bridge                     string // empty for none
	confDir, dataDir, cacheDir string
}

// newCNINet returns a network, on a new bridge named nrdc<8 hex digits>
// if bridged, which is deleted by name when the test ends (after the
// daemon's cleanup, which deletes the pod namespaces, if the daemon is
// created later). Its install method is a daemonConfig.prepare.
func newCNINet(t testing.TB, bridged bool) *cniNet {
	t.Helper()
	n := &cniNet{}
	if bridged {
		n.bridge = "nrdc" + randHex(4)
		t.Cleanup(func() { testutil.DeleteLink(n.bridge) })
	}
	return n
}

// install writes the conflist and conf.d/20-cni.conf and links nri-cni
// into the daemon's plugin directory.
func (n *cniNet) install(d *daemon) {
	t := d.t
	t.Helper()
	root := filepath.Join(d.dir, "cni")
	n.confDir, n.dataDir, n.cacheDir = filepath.Join(root, "net.d"), filepath.Join(root, "data"), filepath.Join(root, "cache")
	for _, dir := range []string{n.confDir, n.dataDir, n.cacheDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ipam := map[string]any{
		"type": "host-local", "dataDir": n.dataDir,
		"ranges": [][]map[string]string{{{"subnet": cniSubnet}}},
	}
	entry := map[string]any{"type": "host-local", "ipam": ipam}
	if n.bridge != "" {
		entry = map[string]any{"type": "bridge", "bridge": n.bridge, "isGateway": true, "ipMasq": false, "ipam": ipam}
	}
	writeJSONFile(t, filepath.Join(n.confDir, "10-"+cniNetName+".conflist"), map[string]any{
		"cniVersion": "1.0.0", "name": cniNetName, "plugins": []any{entry},
	})
	writeJSONFile(t, filepath.Join(d.dir, "conf.d", "20-cni.conf"), map[string]any{
		"confDir": n.confDir, "binDirs": []string{testutil.CNIPluginDir(t)}, "cacheDir": n.cacheDir,
	})
	if err := os.Symlink(nriCNIBin(t), filepath.Join(d.dir, "plugins", "20-cni")); err != nil {
		t.Fatal(err)
	}
}

// allocations lists host-local's reservations, files named after an IP,
// with their contents (container ID and interface).
func (n *cniNet) allocations(t testing.TB) map[string]string {
	t.Helper()
	dir := filepath.Join(n.dataDir, cniNetName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = strings.TrimSpace(string(b))
	}
	return out
}

// cached lists the files of libcni's cache whose names hold the pod ID.
func (n *cniNet) cached(id string) []string {
	var out []string
	filepath.WalkDir(n.cacheDir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.Contains(e.Name(), id) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// linkPorts lists the interfaces attached to a bridge.
func linkPorts(t testing.TB, bridge string) []string {
	t.Helper()
	var links []struct {
		Name string `json:"ifname"`
	}
	out := testutil.Run(t, "ip", "-j", "link", "show", "master", bridge)
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("ip -j link show master %s: %v\n%s", bridge, err, out)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	return names
}

// waitNoPorts waits until nothing is attached to the bridge (pod veths
// are deleted in the background, and a deleted namespace frees its
// interfaces asynchronously).
func waitNoPorts(t testing.TB, bridge string) {
	t.Helper()
	if err := testutil.Poll(5*time.Second, 20*time.Millisecond, func() error {
		if ports := linkPorts(t, bridge); len(ports) != 0 {
			return fmt.Errorf("interfaces %v are still attached to bridge %s", ports, bridge)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// netnsPath is the path of a pod's network namespace.
func netnsPath(id string) string { return filepath.Join(testutil.NetNSDir, "nrinet-"+id[:12]) }

// hookPlugin is an NRI plugin, run in the test process against the
// daemon's NRI socket, whose RunPodSandbox calls run (if set), and which
// records the pod events it gets.
type hookPlugin struct {
	run func(ctx context.Context, pod *api.PodSandbox) error

	mu     sync.Mutex
	events []string // "Event ID"
	ids    []string // the pods RunPodSandbox was called for, in order
}

func (h *hookPlugin) record(ev string, pod *api.PodSandbox) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev+" "+pod.GetId())
	if ev == "RunPodSandbox" {
		h.ids = append(h.ids, pod.GetId())
	}
}

func (h *hookPlugin) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	h.record("RunPodSandbox", pod)
	if h.run != nil {
		return h.run(ctx, pod)
	}
	return nil
}

func (h *hookPlugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	h.record("StopPodSandbox", pod)
	return nil
}

func (h *hookPlugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	h.record("RemovePodSandbox", pod)
	return nil
}

// seen returns the pods RunPodSandbox was called for.
func (h *hookPlugin) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ids)
}

// got returns the events of a pod, in order.
func (h *hookPlugin) got(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		if ev, ok := strings.CutSuffix(e, " "+id); ok {
			out = append(out, ev)
		}
	}
	return out
}

// startHook connects h to the daemon as idx-name and waits until crictl
// info lists it.
func (d *daemon) startHook(h *hookPlugin, idx, name string) {
	d.t.Helper()
	s, err := plugin.New(h, plugin.WithPluginName(name), plugin.WithPluginIdx(idx), plugin.WithSocketPath(d.nriSock))
	if err != nil {
		d.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(s.Stop)
	testutil.WaitFor(d.t, idx+"-"+name+" in crictl info", 10*time.Second, func() bool {
		return slices.Contains(d.info().NRI.plugins(), idx+"-"+name)
	})
}

// runpFails runs crictl runp, which must fail, and returns its standard
// error with crictl's quoting undone.
func (d *daemon) runpFails(podFile string) string {
	d.t.Helper()
	out, errOut, err := d.crictl("runp", podFile)
	if err == nil {
		id := strings.TrimSpace(out)
		if len(id) == 64 {
			d.ids = append(d.ids, id)
		}
		d.t.Fatalf("crictl runp %s succeeded with sandbox %s, want it to fail", filepath.Base(podFile), id)
	}
	return strings.ReplaceAll(errOut, `\"`, `"`)
}

// checkNoLeak fails unless nothing is left of a pod whose runp failed:
// no sandbox, no network namespace, nothing on the podnet bridge.
func (d *daemon) checkNoLeak(t *testing.T, id string) {
	t.Helper()
	if got := d.pods(); len(got) != 0 {
		t.Errorf("crictl pods = %v after the failed runp, want none", got)
	}
	if _, errOut, err := d.crictl("inspectp", id); err == nil || !strings.Contains(errOut, "NotFound") {
		t.Errorf("crictl inspectp %s of the failed pod: %v, %s; want NotFound", id[:13], err, errOut)
	}
	if p := netnsPath(id); exists(p) {
		t.Errorf("network namespace %s of the failed pod still exists", p)
	}
	waitNoPorts(t, d.bridge)
}

func TestCrictl_ConflictingNetworkPlugins(t *testing.T) {
	// nri-podnet (10-podnet) and nri-cni (20-cni) are both installed, and
	// both give the pod an IPv4 address: the runtime refuses the second.
	// A bridge network cannot get that far: 10-podnet has already
	// created eth0, so the bridge plugin's ADD fails. Either way crictl
	// runp fails and nothing of either plugin is left.
	for _, tc := range []struct {
		name    string
		bridged bool
		want    []string // in crictl's error
	}{
		{"ipv4-conflict", false, []string{
			`plugins "20-cni" and "10-podnet" both tried to set the pod's IPv4 addresses (198.18.221.`,
			"; already 198.18.211.",
		}},
		{"bridge-eth0", true, []string{
			`plugin "20-cni": RunPodSandbox: CNI network "` + cniNetName + `" ADD failed: plugin type="bridge" failed (add)`,
			`container veth name ("eth0")`, "already exists",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.SkipUnlessRoot(t)
			cn := newCNINet(t, tc.bridged)
			d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet", "cni"}, prepare: cn.install})
			// A plugin called before both network plugins tells the pod's ID.
			rec := &hookPlugin{}
			d.startHook(rec, "05", "recorder")

			errOut := d.runpFails(d.writePod("web", nil, false))
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("crictl runp with both network plugins failed with\n%s\nwant it to contain %q", errOut, w)
				}
			}
			ids := rec.seen()
			if len(ids) != 1 {
				t.Fatalf("RunPodSandbox reached 05-recorder for pods %v, want one", ids)
			}
			id := ids[0]
			d.checkNoLeak(t, id)
			// The runtime told the plugins that had succeeded to undo the pod.
			if got, want := rec.got(id), []string{"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox"}; !slices.Equal(got, want) {
				t.Errorf("05-recorder got %v for the failed pod, want %v", got, want)
			}
			if tc.bridged {
				waitNoPorts(t, cn.bridge)
			}
			if a := cn.allocations(t); len(a) != 0 {
				t.Errorf("host-local still holds %v in %s", a, cn.dataDir)
			}
			if c := cn.cached(id); len(c) != 0 {
				t.Errorf("libcni still caches the failed pod: %v", c)
			}
			d.stop()
			if owners := d.podnetOwners(); len(owners) != 0 {
				t.Errorf("nri-podnet still allocates addresses to %v", owners)
			}
		})
	}
}

func TestCrictl_BlockingPlugin(t *testing.T) {
	// Plugins get 30s per request, so that the blocked one is not dropped
	// for a timeout while the test looks.
	d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet"}, requestTimeout: 30 * time.Second})
	entered, release := make(chan string, 1), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	h := &hookPlugin{run: func(ctx context.Context, pod *api.PodSandbox) error {
		select {
		case entered <- pod.GetId():
		default: // only the first pod is expected
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	d.startHook(h, "30", "blocker")
	podFile := d.writePod("slow", nil, false)

	// crictl runp in the background; the test waits for it before the
	// daemon is stopped, releasing the plugin first if it failed.
	var (
		runOut, runErrOut string
		runErr            error
	)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runOut, runErrOut, runErr = d.crictl("runp", podFile)
	}()
	t.Cleanup(func() {
		unblock()
		<-finished
	})

	var id string
	select {
	case id = <-entered:
	case <-finished:
		t.Fatalf("crictl runp returned before the plugin blocked: %v\n%s%s", runErr, runOut, runErrOut)
	case <-time.After(10 * time.Second):
		t.Fatal("RunPodSandbox did not reach 30-blocker within 10s")
	}

	// While the hook blocks, the sandbox is being created (its namespace
	// exists) but invisible, and its name is taken.
	if !exists(netnsPath(id)) {
		t.Errorf("network namespace %s does not exist while RunPodSandbox is in the hook", netnsPath(id))
	}
	if got := d.pods(); len(got) != 0 {
		t.Errorf("crictl pods -q = %v while RunPodSandbox is in the hook, want nothing", got)
	}
	for _, ref := range []string{id, id[:13]} {
		if _, errOut, err := d.crictl("inspectp", ref); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("crictl inspectp %s while RunPodSandbox is in the hook: %v, %s; want NotFound", ref, err, errOut)
		}
	}
	if errOut := d.runpFails(podFile); !strings.Contains(errOut, "AlreadyExists") || !strings.Contains(errOut, "held by sandbox "+id) {
		t.Errorf("a second crictl runp of the same pod while the first is in the hook failed with\n%s\nwant AlreadyExists, held by sandbox %s", errOut, id)
	}
	select {
	case <-finished:
		t.Fatalf("crictl runp returned while the plugin blocked: %v\n%s%s", runErr, runOut, runErrOut)
	default:
	}

	unblock()
	select {
	case <-finished:
	case <-time.After(15 * time.Second):
		t.Fatal("crictl runp did not return within 15s of releasing the plugin")
	}
	if runErr != nil {
		t.Fatalf("crictl runp after releasing the plugin: %v\n%s%s", runErr, runOut, runErrOut)
	}
	if got := strings.TrimSpace(runOut); got != id {
		t.Fatalf("crictl runp printed %q, want the ID the plugin saw, %s", got, id)
	}
	d.ids = append(d.ids, id)
	if got := d.pods("--state", "ready"); !slices.Equal(got, []string{id}) {
		t.Errorf("crictl pods -q --state ready = %v, want [%s]", got, id)
	}
	i := d.inspectp(id)
	if i.Status.State != "SANDBOX_READY" {
		t.Errorf("inspectp: state %s, want SANDBOX_READY", i.Status.State)
	}
	checkDualStack(t, "inspectp", i.ips())
	if seen := h.seen(); !slices.Equal(seen, []string{id}) {
		t.Errorf("30-blocker got RunPodSandbox for %v, want only %s", seen, id)
	}

	d.must("rmp", "-f", id)
	d.stop()
	if owners := d.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}

func TestCrictl_FailingHookThenRetry(t *testing.T) {
	d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet"}})
	const refusal = "e2e-flaky refuses the first pod sandbox"
	var calls atomic.Int32
	h := &hookPlugin{run: func(context.Context, *api.PodSandbox) error {
		if calls.Add(1) == 1 {
			return errors.New(refusal)
		}
		return nil
	}}
	// After 10-podnet, which has set the pod up when the hook fails.
	d.startHook(h, "30", "flaky")
	podFile := d.writePod("retry", nil, false)

	errOut := d.runpFails(podFile)
	if want := `plugin "30-flaky": RunPodSandbox: ` + refusal; !strings.Contains(errOut, want) {
		t.Fatalf("crictl runp failed with\n%s\nwant it to contain %q", errOut, want)
	}
	seen := h.seen()
	if len(seen) != 1 {
		t.Fatalf("30-flaky got RunPodSandbox for %v, want one pod", seen)
	}
	first := seen[0]
	d.checkNoLeak(t, first)
	// The plugin that failed is not told to stop what it did not start.
	if got := h.got(first); !slices.Equal(got, []string{"RunPodSandbox"}) {
		t.Errorf("30-flaky got %v for the failed pod, want only RunPodSandbox", got)
	}

	// The same configuration again: the name was released.
	id := d.runp(podFile)
	if id == first {
		t.Fatalf("the retry got the failed sandbox's ID %s", id)
	}
	if got := d.pods(); !slices.Equal(got, []string{id}) {
		t.Errorf("crictl pods -q = %v after the retry, want [%s]", got, id)
	}
	i := d.inspectp(id)
	if i.Status.State != "SANDBOX_READY" {
		t.Errorf("inspectp: state %s, want SANDBOX_READY", i.Status.State)
	}
	checkDualStack(t, "inspectp after the retry", i.ips())
	if len(i.Info.IPs) != 2 || i.Info.IPs[0].Owner != "10-podnet" || i.Info.IPs[1].Owner != "10-podnet" {
		t.Errorf("inspectp info ips = %+v, want two owned by 10-podnet", i.Info.IPs)
	}
	if !exists(netnsPath(id)) {
		t.Errorf("network namespace %s of the retried pod does not exist", netnsPath(id))
	}

	d.must("rmp", "-f", id)
	d.stop()
	if owners := d.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}
