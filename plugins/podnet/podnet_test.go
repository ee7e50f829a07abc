package podnet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
	"github.com/nrinet/nrinet/runtime"
)

// binary is the nri-podnet executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nri-podnet-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "nri-podnet")
	if err := testutil.GoBuild("", dir, nil, "github.com/nrinet/nrinet/cmd/nri-podnet"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

type logBuffer = testutil.LogBuffer

// env is a runtime that launched nri-podnet from its plugin directory.
type env struct {
	t        *testing.T
	rt       *runtime.Runtime
	cfg      podnet.Config
	dir      string
	netPfx   string // unique prefix of this test's namespace names
	logs     *logBuffer
	opts     []runtime.Option
	v4, v6   netip.Prefix
	cleanups []func()
}

// newEnv writes a configuration with a unique bridge and subnets and
// starts a runtime that launches nri-podnet with it.
func newEnv(t *testing.T, dualStack bool, opts ...runtime.Option) *env {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	x := 1 + int(randHex(1)[0])%90 // a /24 of 198.18.0.0/16 per test
	e := &env{t: t, dir: t.TempDir(), netPfx: "nrp" + randHex(3), logs: &logBuffer{}, opts: opts}
	e.v4 = netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", x))
	e.v6 = netip.MustParsePrefix(fmt.Sprintf("fd00:198:18:%x::/64", x))
	e.cfg = podnet.Config{
		Bridge:   "nrpb" + randHex(4),
		Subnets:  []string{e.v4.String()},
		MTU:      1400,
		StateDir: filepath.Join(e.dir, "state"),
	}
	if dualStack {
		e.cfg.Subnets = append(e.cfg.Subnets, e.v6.String())
	}
	t.Cleanup(func() { deleteBridge(e.cfg.Bridge) })
	e.start(nil)
	return e
}

// start (re)starts the runtime, which launches the plugin. sync lists the
// pods the runtime reports to the plugin.
func (e *env) start(pods []*api.PodSandbox) {
	e.t.Helper()
	pluginDir, confDir := filepath.Join(e.dir, "plugins"), filepath.Join(e.dir, "conf.d")
	os.MkdirAll(pluginDir, 0o755)
	os.MkdirAll(confDir, 0o755)
	b, _ := json.Marshal(e.cfg)
	if err := os.WriteFile(filepath.Join(confDir, "10-podnet.conf"), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(binary, filepath.Join(pluginDir, "10-podnet")); err != nil && !os.IsExist(err) {
		e.t.Fatal(err)
	}
	rt, err := runtime.New("podnet-test", "v0", append([]runtime.Option{
		runtime.WithPluginPath(pluginDir), runtime.WithPluginConfigPath(confDir), runtime.WithoutExternalPlugins(),
		runtime.WithRequiredNetworkPlugins("podnet"),
		runtime.WithLogger(slog.New(slog.NewTextHandler(e.logs, nil))),
		runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return pods, nil, nil }),
	}, e.opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if ready, why := rt.NetworkReady(); !ready {
		e.t.Fatalf("nri-podnet did not join: %s\n%s", why, e.logs)
	}
	e.rt = rt
	e.t.Cleanup(e.stop)
}

// stop stops the runtime; the plugin gets Shutdown and exits.
func (e *env) stop() {
	if e.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.rt.Stop(ctx)
	e.rt = nil
}

// pod returns a pod with a fresh named network namespace.
func (e *env) pod(i int) (*api.PodSandbox, string) {
	e.t.Helper()
	name := fmt.Sprintf("%s-%d", e.netPfx, i)
	path := testutil.NewNetNS(e.t, name)
	return &api.PodSandbox{
		Id: "pod-" + e.netPfx + "-" + strconv.Itoa(i), Name: fmt.Sprintf("web-%d", i), Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: path}}},
	}, name
}

// owners opens the plugin's allocator (the plugin must be stopped) and
// lists the pods holding addresses.
func (e *env) owners() []string {
	e.t.Helper()
	return allocationOwners(e.t, e.cfg)
}

// allocationOwners opens the allocator of a plugin with configuration cfg
// (the plugin must be stopped: it holds the database's lock), checks it,
// and lists the pods holding addresses, sorted.
func allocationOwners(t testing.TB, cfg podnet.Config) []string {
	t.Helper()
	icfg, err := ipam.ParseConfig(cfg.Subnets, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ipam.Open(filepath.Join(cfg.StateDir, "ipam.db"), icfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Check(); err != nil {
		t.Fatalf("allocator inconsistent: %v", err)
	}
	o, err := a.Owners()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(o)
	return o
}

// bridgePorts lists the interfaces attached to the bridge.
func (e *env) bridgePorts() []string {
	out, _ := exec.Command("ip", "-o", "link", "show", "master", e.cfg.Bridge).Output()
	var ports []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			ports = append(ports, strings.TrimSuffix(strings.Split(f[1], "@")[0], ":"))
		}
	}
	return ports
}

func podAddrs(t *testing.T, ns string) []string { return testutil.PodAddrs(t, ns) }

func TestPodnet_ThreePodsDualStack(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	type podInfo struct {
		pod *api.PodSandbox
		ns  string
		ips []string
	}
	var pods []podInfo
	for i := range 3 {
		pod, ns := e.pod(i)
		rec, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
		if err != nil {
			t.Fatalf("RunPodSandbox: %v\n%s", err, e.logs)
		}
		ips := rec.GetNetwork().GetIps()
		if len(ips) != 2 || !e.v4.Contains(netip.MustParseAddr(ips[0])) || !e.v6.Contains(netip.MustParseAddr(ips[1])) {
			t.Fatalf("pod %d ips = %v, want one from %s then one from %s", i, ips, e.v4, e.v6)
		}
		if got := rec.GetOwners()[api.OwnerIPv4]; got != "10-podnet" {
			t.Errorf("IPv4 owner = %q", got)
		}
		itf := rec.GetNetwork().GetInterfaces()[0]
		if itf.GetName() != "eth0" || itf.GetMtu() != 1400 || itf.GetMac() == "" {
			t.Errorf("interface = %v", itf)
		}
		// What the plugin reported is what the kernel has.
		want := slices.Sorted(slices.Values(ips))
		if got := podAddrs(t, ns); !slices.Equal(got, want) {
			t.Errorf("eth0 in %s has %v, plugin reported %v", ns, got, want)
		}
		mac := testutil.Run(t, "ip", "-n", ns, "-o", "link", "show", "dev", "eth0")
		if !strings.Contains(mac, itf.GetMac()) {
			t.Errorf("eth0 in %s: %s; want MAC %s", ns, mac, itf.GetMac())
		}
		pods = append(pods, podInfo{pod, ns, ips})
	}
	for _, from := range pods {
		for _, to := range pods {
			if from.ns == to.ns {
				continue
			}
			for _, ip := range to.ips {
				if err := testutil.Ping(from.ns, ip); err != nil {
					t.Error(err)
				}
			}
		}
	}
	for _, p := range pods {
		rec, err := e.rt.PodSandboxStatus(ctx, p.pod, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.GetNetwork().GetIps(); !slices.Equal(got, p.ips) || rec.GetNetwork().GetInfo()[podnet.InfoCheck] != "ok" {
			t.Errorf("status = %v, want ips %v and check ok", rec.GetNetwork(), p.ips)
		}
	}
	// A tracked UDP connection to each pod address, as a client outside
	// the node would leave one (whether the pings above were tracked
	// depends on the rulesets of this namespace).
	for i, p := range pods {
		for _, ip := range p.ips {
			dst := net.ParseIP(ip)
			src, fam := net.ParseIP("198.51.100.7"), netlink.InetFamily(unix.AF_INET)
			if dst.To4() == nil {
				src, fam = net.ParseIP("2001:db8::7"), unix.AF_INET6
			}
			flow := &netlink.ConntrackFlow{FamilyType: uint8(fam), TimeOut: 100,
				Forward: netlink.IPTuple{SrcIP: src, DstIP: dst, Protocol: unix.IPPROTO_UDP, SrcPort: uint16(40000 + i), DstPort: 53},
				Reverse: netlink.IPTuple{SrcIP: dst, DstIP: src, Protocol: unix.IPPROTO_UDP, SrcPort: 53, DstPort: uint16(40000 + i)}}
			if err := netlink.ConntrackCreate(netlink.ConntrackTable, fam, flow); err != nil {
				t.Fatalf("creating a tracked connection to %s: %v", ip, err)
			}
		}
	}
	for _, p := range pods {
		if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: p.pod}); err != nil {
			t.Fatal(err)
		}
		testutil.DeleteNetNS(p.ns)
	}
	// The pods' addresses took their connections along.
	for _, fam := range []netlink.InetFamily{unix.AF_INET, unix.AF_INET6} {
		flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flows {
			for _, p := range pods {
				for _, ip := range p.ips {
					if f.Forward.SrcIP.String() == ip || f.Forward.DstIP.String() == ip {
						t.Errorf("a tracked connection of a stopped pod's address %s: %s", ip, f)
					}
				}
			}
		}
	}
	e.stop()
	if o := e.owners(); len(o) != 0 {
		t.Errorf("addresses still allocated after stop: %v", o)
	}
	testutil.WaitFor(t, "veths to go", 10*time.Second, func() bool { return len(e.bridgePorts()) == 0 })
}

func TestPodnet_RestartKeepsAllocations(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	keep, _ := e.pod(1)
	gone, goneNS := e.pod(2)
	recKeep, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: keep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: gone}); err != nil {
		t.Fatal(err)
	}
	e.stop() // the plugin process exits
	if o := e.owners(); len(o) != 2 {
		t.Fatalf("allocations after the plugin exited: %v", o)
	}
	testutil.DeleteNetNS(goneNS)
	// The runtime restarts and knows only the first pod: the plugin keeps
	// its addresses and releases the other pod's.
	e.start([]*api.PodSandbox{keep})
	st, err := e.rt.PodSandboxStatus(ctx, keep, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.GetNetwork().GetIps(); !slices.Equal(got, recKeep.GetNetwork().GetIps()) {
		t.Errorf("after restart status ips = %v, before %v", got, recKeep.GetNetwork().GetIps())
	}
	again, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: keep})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.GetNetwork().GetIps(); !slices.Equal(got, recKeep.GetNetwork().GetIps()) {
		t.Errorf("RunPodSandbox again gave %v, first time %v", got, recKeep.GetNetwork().GetIps())
	}
	e.stop()
	if o := e.owners(); !slices.Equal(o, []string{keep.Id}) {
		t.Errorf("allocations = %v, want only %s", o, keep.Id)
	}
}

func TestPodnet_HostNetworkAndMissingNetns(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	host := &api.PodSandbox{Id: "host-pod", Name: "host", Namespace: "kube-system"}
	if rec, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: host}); err != nil || rec != nil {
		t.Fatalf("host-network pod: %v, %v", rec, err)
	}
	missing := &api.PodSandbox{Id: "lost-pod", Name: "lost", Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/" + e.netPfx + "-missing"}}}}
	_, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: missing})
	if err == nil || !strings.Contains(err.Error(), `plugin "10-podnet"`) || !strings.Contains(err.Error(), e.netPfx+"-missing") {
		t.Fatalf("error = %v, want one naming the plugin and the missing namespace", err)
	}
}

// TestPodnet_BadConfig starts the executable with bad configurations and
// flags: it exits with status 2 (a usage or configuration error) and the
// reason, before it connects or waits for anything, and changes nothing.
func TestPodnet_BadConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	dir := t.TempDir()
	file := func(name, content string) string { return testutil.WriteFile(t, dir, name, content) }
	good := file("good.json", `{"bridge": "nrpbad", "subnets": ["198.18.0.0/24"]}`)
	missing := filepath.Join(dir, "missing.json")
	sock := []string{"-socket", filepath.Join(dir, "none.sock")}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad JSON", []string{"-config", file("json.json", `{"bridge": "nrpbad", "subnets": [`)}, "parsing configuration"},
		{"overlapping subnets", []string{"-config", file("overlap.json", `{"bridge": "nrpbad", "subnets": ["198.18.0.0/16", "198.18.7.0/24"]}`)}, "overlap"},
		{"two IPv4 subnets", []string{"-config", file("two.json", `{"bridge": "nrpbad", "subnets": ["198.18.0.0/24", "198.18.1.0/24"]}`)}, "at most one IPv4"},
		{"unknown field", []string{"-config", file("unknown.json", `{"bridge": "nrpbad", "subnets": ["198.18.0.0/24"], "mtu2": 1}`)}, "unknown field"},
		{"bad bridge name", []string{"-config", file("bridge.json", `{"bridge": "a/b", "subnets": ["198.18.0.0/24"]}`)}, `bridge name "a/b"`},
		{"missing file", []string{"-config", missing}, "no such file"},
		{"stray argument", []string{"-config", good, "extra"}, `unexpected arguments ["extra"`},
		{"HTTP address without a port", []string{"-config", good, "-http-address", "9465"}, `-http-address "9465": missing port`},
		{"bad cluster CIDR", []string{"-config", good, "-cluster-cidr", "198.18.0.0/33"}, "-cluster-cidr"},
		// With -kube the file is read at start, not once the Node has pod
		// CIDRs: no cluster is needed to be refused.
		{"-kube: subnets in the file", []string{"-kube", "-node-name", "n1", "-config", good}, "with -kube the subnets are Node n1's spec.podCIDRs"},
		{"-kube: missing file", []string{"-kube", "-node-name", "n1", "-config", missing}, "no such file"},
		{"-kube without a node name", []string{"-kube", "-node-name", ""}, "-kube needs this node's name"},
		{"-kube: noBridgeNetfilter with policies", []string{"-kube", "-node-name", "n1", "-config", file("nobrnf.json", `{"bridge": "nrpbad", "noBridgeNetfilter": true}`)}, "noBridgeNetfilter: true turns NetworkPolicy enforcement between this node's pods off"},
		{"-uninstall: missing file", []string{"-uninstall", "-config", missing}, "no such file"},
		{"-uninstall: bad JSON", []string{"-uninstall", "-config", file("uninstall.json", `{"bridge": `)}, "parsing configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, append(tc.args, sock...)...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if status := testutil.RunStatus(t, cmd); status != 2 || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "panic") {
				t.Fatalf("nri-podnet %s: exit status %d\n%s\nwant exit status 2 and an error containing %q", strings.Join(tc.args, " "), status, out.String(), tc.want)
			}
		})
	}
	if _, err := netlink.LinkByName("nrpbad"); err == nil {
		t.Error("a refused configuration created the bridge nrpbad")
	}
}

// TestPodnet_Cycles runs many sequential pod run/stop cycles and checks
// that nothing leaks and that the plugin's memory stays flat: 200 cycles,
// or NRINET_SOAK_CYCLES (`make soak` runs 10000).
func TestPodnet_Cycles(t *testing.T) {
	n := 200
	if v := os.Getenv("NRINET_SOAK_CYCLES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("NRINET_SOAK_CYCLES=%q is not a number of cycles (2 or more)", v)
		}
	}
	// A generous request timeout: this test is about leaks, and a loaded
	// CI machine must not turn a slow netlink call into a dropped plugin.
	e := newEnv(t, true, runtime.WithRequestTimeout(15*time.Second))
	ctx := context.Background()
	pid := e.rt.Plugins()[0].Pid
	rss := map[int]int{}
	start := time.Now()
	for i := 0; i <= n; i++ {
		if i == 0 || i == n/2 || i == n {
			rss[i] = readRSS(t, pid)
		}
		if i == n {
			break
		}
		name := fmt.Sprintf("%s-c%d", e.netPfx, i%4)
		path := testutil.NewNetNS(t, name)
		pod := &api.PodSandbox{Id: fmt.Sprintf("cycle-%d", i), Name: "cycle", Namespace: "soak",
			Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: path}}}}
		if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatalf("cycle %d: %v\n%s", i, err, tail(e.logs.String(), 3000))
		}
		if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		testutil.DeleteNetNS(name)
	}
	t.Logf("%d cycles in %v; plugin RSS: %d KiB at 0, %d KiB at %d, %d KiB at %d", n, time.Since(start).Round(time.Second),
		rss[0], rss[n/2], n/2, rss[n], n)
	if rss[n] > 2*rss[n/2]+8<<10 {
		t.Errorf("plugin memory grew: %d KiB at %d cycles, %d KiB at %d", rss[n/2], n/2, rss[n], n)
	}
	e.stop()
	if o := e.owners(); len(o) != 0 {
		t.Errorf("%d addresses leaked: %v", len(o), o[:min(len(o), 5)])
	}
	testutil.WaitFor(t, "veths to go", 60*time.Second, func() bool { return len(e.bridgePorts()) == 0 })
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), e.netPfx) {
		t.Errorf("namespaces left: %s", out)
	}
}

// readRSS returns the resident set size of a process in KiB.
func readRSS(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// A pod whose setup fails keeps nothing: not its addresses, not a host
// veth; the error names the pod and the cause.
func TestPodnet_SetupFailureLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare readies the pod's namespace (or the plugin) so that the
		// setup fails.
		prepare func(t *testing.T, e *env, ns string)
		want    []string // in the error
	}{
		{
			// eth0 is taken, as by CNI on a runtime without the extension.
			name: "eth0 exists",
			prepare: func(t *testing.T, _ *env, ns string) {
				testutil.Run(t, "ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0peer")
			},
			want: []string{"creating veth", "eth0", "file exists"},
		},
		{
			// Every address of the subnet is excluded.
			name: "subnet exhausted",
			prepare: func(t *testing.T, e *env, _ string) {
				e.stop()
				e.cfg.Exclude = []string{e.v4.String()}
				e.cfg.StateDir = filepath.Join(e.dir, "state-exhausted")
				e.start(nil)
			},
			want: []string{"no free address"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			pod, ns := e.pod(0)
			tc.prepare(t, e, ns)
			_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
			if err == nil {
				t.Fatal("RunPodSandbox succeeded")
			}
			for _, w := range append(tc.want, pod.GetNamespace()+"/"+pod.GetName()) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			testutil.WaitFor(t, "the host veth to go", 10*time.Second, func() bool { return len(e.bridgePorts()) == 0 })
			testutil.DeleteNetNS(ns)
			e.stop()
			if o := e.owners(); len(o) != 0 {
				t.Errorf("addresses allocated after the failed setup: %v", o)
			}
		})
	}
}

// The bridge has a usable (not tentative) IPv6 link-local address as soon
// as the first pod is attached: the kernel solicits neighbours for
// forwarded packets (traffic from other nodes) only from one, and its own,
// made when the bridge gets its first port, spends a second in duplicate
// address detection.
func TestPodnet_BridgeLinkLocalUsableAtOnce(t *testing.T) {
	e := newEnv(t, true)
	pod, ns := e.pod(0)
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatalf("RunPodSandbox: %v\n%s", err, e.logs)
	}
	out := testutil.Run(t, "ip", "-6", "-o", "addr", "show", "dev", e.cfg.Bridge, "scope", "link")
	var usable, tentative []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, "fe80:") {
			continue
		}
		if strings.Contains(l, "tentative") {
			tentative = append(tentative, l)
		} else {
			usable = append(usable, l)
		}
	}
	if len(usable) == 0 {
		t.Errorf("bridge %s has no usable link-local address right after its first pod; tentative: %v", e.cfg.Bridge, tentative)
	}
	if len(tentative) > 0 {
		t.Errorf("bridge %s has tentative link-local addresses: %v", e.cfg.Bridge, tentative)
	}
	e.rt.StopPodSandbox(context.Background(), &api.StopPodSandboxRequest{Pod: pod})
	testutil.DeleteNetNS(ns)
}

// The bridge's MAC address is fixed (derived from its name), so that it
// does not change when the port whose MAC the kernel would otherwise
// take goes away: the pods' neighbour entries for their gateway stay
// right.
func TestPodnet_BridgeMACStable(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	mac := func() string {
		f := strings.Fields(testutil.Run(t, "ip", "-o", "link", "show", "dev", e.cfg.Bridge))
		i := slices.Index(f, "link/ether")
		if i < 0 || i+1 >= len(f) {
			t.Fatalf("no MAC in %q", f)
		}
		return f[i+1]
	}
	want := mac()
	if b, err := strconv.ParseUint(want[:2], 16, 8); err != nil || b&0x02 == 0 || b&0x01 != 0 {
		t.Errorf("bridge MAC %s is not a locally administered unicast address", want)
	}
	var pods []*api.PodSandbox
	for i := range 4 {
		pod, _ := e.pod(i)
		if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod)
	}
	for i, pod := range pods {
		if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, "the veth to go", 10*time.Second, func() bool { return len(e.bridgePorts()) == len(pods)-i-1 })
		if got := mac(); got != want {
			t.Fatalf("after pod %d went, the bridge's MAC is %s, was %s", i, got, want)
		}
	}
}

// deleteBridge deletes a test's bridge and its port security table (the
// plugin keeps the table while it guards ports, as across restarts).
func deleteBridge(name string) {
	testutil.DeleteLink(name)
	if g, err := portsec.New(name, podnet.HostVethPrefix); err == nil {
		g.Uninstall()
	}
}
