package cri_test

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/runtime"
)

// The pod network of this package's tests, unlikely to clash with other
// packages' tests running at the same time.
var (
	testV4 = netip.MustParsePrefix("198.18.210.0/24")
	testV6 = netip.MustParsePrefix("fd00:198:18:210::/64")
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// logBuffer collects logs for failure messages.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// envConfig says what an env runs.
type envConfig struct {
	podnet   bool     // launch nri-podnet (needs root)
	required []string // required network plugins
	// stateTmpfs mounts a 1 MiB tmpfs as the store's directory (needs
	// root), unmounted when the test ends.
	stateTmpfs bool
}

// env is a CRI server on a runtime library and a store in a temp dir,
// with a gRPC client over its socket. It can be restarted on the same
// state.
type env struct {
	t       testing.TB
	cfg     envConfig
	dir     string
	nriSock string
	criSock string
	bridge  string
	logs    *logBuffer

	store  *cri.Store
	rt     *runtime.Runtime
	srv    *cri.Server
	reg    *prometheus.Registry
	conn   *grpc.ClientConn
	client criapi.RuntimeServiceClient
	images criapi.ImageServiceClient
	served chan error
	// ids are the sandboxes created, whose namespaces the test's cleanup
	// deletes in case the test failed before removing them.
	ids []string
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	if cfg.podnet {
		testutil.SkipUnlessRoot(t)
	}
	// Short paths: unix socket names are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "nrinetd-cri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{
		t: t, cfg: cfg, dir: dir, logs: &logBuffer{},
		nriSock: filepath.Join(dir, "nri.sock"), criSock: filepath.Join(dir, "cri.sock"),
	}
	if cfg.podnet {
		e.bridge = "nrdb" + randHex(4)
		t.Cleanup(func() { testutil.DeleteLink(e.bridge) })
		e.installPodnet()
	}
	if cfg.stateTmpfs {
		testutil.SkipUnlessRoot(t)
		state := filepath.Join(dir, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", state, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=1m,mode=0700"); err != nil {
			t.Fatalf("mounting a tmpfs on %s: %v", state, err)
		}
		// Runs after the env's stop, which closes the store.
		t.Cleanup(func() {
			if err := unix.Unmount(state, 0); err != nil {
				t.Errorf("unmounting %s: %v", state, err)
			}
		})
	}
	e.start()
	t.Cleanup(func() {
		e.stop()
		for _, id := range e.ids {
			testutil.DeleteNetNS("nrinet-" + id[:12])
		}
	})
	return e
}

// installPodnet puts nri-podnet into the plugin directory as 10-podnet,
// dual-stack, with this env's bridge.
func (e *env) installPodnet() {
	e.t.Helper()
	pluginDir, confDir := filepath.Join(e.dir, "plugins"), filepath.Join(e.dir, "conf.d")
	for _, d := range []string{pluginDir, confDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	b, _ := json.Marshal(podnet.Config{
		Bridge:   e.bridge,
		Subnets:  []string{testV4.String(), testV6.String()},
		MTU:      1400,
		StateDir: filepath.Join(e.dir, "podnet"),
	})
	if err := os.WriteFile(filepath.Join(confDir, "10-podnet.conf"), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(podnetBinary, filepath.Join(pluginDir, "10-podnet")); err != nil {
		e.t.Fatal(err)
	}
}

// start opens the store, starts the runtime (launching nri-podnet if
// configured) and serves CRI.
func (e *env) start() {
	e.t.Helper()
	store, err := cri.OpenStore(filepath.Join(e.dir, "state", "sandboxes.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := []runtime.Option{
		runtime.WithSocketPath(e.nriSock),
		runtime.WithPluginPath(filepath.Join(e.dir, "plugins")),
		runtime.WithPluginConfigPath(filepath.Join(e.dir, "conf.d")),
		runtime.WithPodNetworkStore(store),
		runtime.WithSyncFunc(store.SyncPods),
		runtime.WithLogger(log.With("component", "nri")),
	}
	if len(e.cfg.required) > 0 {
		opts = append(opts, runtime.WithRequiredNetworkPlugins(e.cfg.required...))
	}
	rt, err := runtime.New(cri.RuntimeName, "v0.0.0-test", opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.reg = prometheus.NewRegistry()
	srv, err := cri.New(rt, store, cri.WithLogger(log.With("component", "cri")), cri.WithStateDir(e.dir),
		cri.WithMetrics(e.reg), cri.WithRuntimeVersion("0.0.0-test"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if e.cfg.podnet {
		if ready, why := rt.NetworkReady(); !ready {
			e.t.Fatalf("nri-podnet did not join: %s\n%s", why, e.logs)
		}
	}
	l, err := net.Listen("unix", e.criSock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.served = make(chan error, 1)
	go func() { e.served <- srv.Serve(context.Background(), l) }()
	conn, err := grpc.NewClient("unix://"+e.criSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.rt, e.srv, e.conn = store, rt, srv, conn
	e.client, e.images = criapi.NewRuntimeServiceClient(conn), criapi.NewImageServiceClient(conn)
}

// stop shuts everything down, as a daemon's graceful shutdown does.
func (e *env) stop() {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.conn.Close()
	e.srv.Shutdown(ctx)
	if err := <-e.served; err != cri.ErrClosed {
		e.t.Errorf("Serve returned %v, want ErrClosed", err)
	}
	e.rt.Stop(ctx)
	e.store.Close()
	e.srv = nil
}

// restart stops and starts again on the same state.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// podConfig is a sandbox configuration; i makes the name unique.
func podConfig(i int, hostNetwork bool) *criapi.PodSandboxConfig {
	uid := fmt.Sprintf("uid-%d-%s", i, randHex(4))
	cfg := &criapi.PodSandboxConfig{
		Metadata:    &criapi.PodSandboxMetadata{Name: fmt.Sprintf("web-%d", i), Namespace: "default", Uid: uid, Attempt: 1},
		Hostname:    fmt.Sprintf("web-%d", i),
		Labels:      map[string]string{"app": "web", "index": fmt.Sprint(i), "io.kubernetes.pod.uid": uid},
		Annotations: map[string]string{"note": "test"},
		Linux:       &criapi.LinuxPodSandboxConfig{SecurityContext: &criapi.LinuxSandboxSecurityContext{NamespaceOptions: &criapi.NamespaceOption{Pid: criapi.NamespaceMode_CONTAINER}}},
	}
	if hostNetwork {
		cfg.Hostname = ""
		cfg.Linux.SecurityContext.NamespaceOptions.Network = criapi.NamespaceMode_NODE
	}
	return cfg
}

// run creates a sandbox and fails the test if that fails.
func (e *env) run(cfg *criapi.PodSandboxConfig) string {
	e.t.Helper()
	rsp, err := e.client.RunPodSandbox(context.Background(), &criapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		e.t.Fatalf("RunPodSandbox: %v\n%s", err, e.logs)
	}
	e.ids = append(e.ids, rsp.GetPodSandboxId())
	return rsp.GetPodSandboxId()
}

// status returns a sandbox's status and fails the test on an error.
func (e *env) status(id string, verbose bool) *criapi.PodSandboxStatusResponse {
	e.t.Helper()
	rsp, err := e.client.PodSandboxStatus(context.Background(), &criapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		e.t.Fatalf("PodSandboxStatus %s: %v", id, err)
	}
	return rsp
}

// list returns the IDs ListPodSandbox returns for f.
func (e *env) list(f *criapi.PodSandboxFilter) []string {
	e.t.Helper()
	rsp, err := e.client.ListPodSandbox(context.Background(), &criapi.ListPodSandboxRequest{Filter: f})
	if err != nil {
		e.t.Fatalf("ListPodSandbox: %v", err)
	}
	var ids []string
	for _, it := range rsp.GetItems() {
		ids = append(ids, it.GetId())
	}
	return ids
}

func (e *env) stopPod(id string) {
	e.t.Helper()
	if _, err := e.client.StopPodSandbox(context.Background(), &criapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		e.t.Fatalf("StopPodSandbox %s: %v", id, err)
	}
}

func (e *env) removePod(id string) {
	e.t.Helper()
	if _, err := e.client.RemovePodSandbox(context.Background(), &criapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		e.t.Fatalf("RemovePodSandbox %s: %v", id, err)
	}
}

// ips returns the addresses a status reports, ip first.
func ips(st *criapi.PodSandboxStatus) []string {
	var out []string
	if ip := st.GetNetwork().GetIp(); ip != "" {
		out = append(out, ip)
	}
	for _, a := range st.GetNetwork().GetAdditionalIps() {
		out = append(out, a.GetIp())
	}
	return out
}

// wantCode fails the test unless err has the gRPC code.
func wantCode(t *testing.T, err error, code codes.Code, what string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: error %v, want code %v", what, err, code)
	}
}

// netnsPath is where nrinetd mounts a sandbox's namespace.
func netnsPath(id string) string { return filepath.Join(cri.NetNSDir, "nrinet-"+id[:12]) }

// exists reports whether a path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// podnetOwners lists the pods nri-podnet allocated addresses to; the
// env must be stopped (the allocator file is locked while in use).
func (e *env) podnetOwners() []string {
	e.t.Helper()
	icfg, err := ipam.ParseConfig([]string{testV4.String(), testV6.String()}, nil, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	a, err := ipam.Open(filepath.Join(e.dir, "podnet", "ipam.db"), icfg)
	if err != nil {
		e.t.Fatal(err)
	}
	defer a.Close()
	owners, err := a.Owners()
	if err != nil {
		e.t.Fatal(err)
	}
	return owners
}

// bridgePorts lists the interfaces attached to the env's bridge.
func (e *env) bridgePorts() []string {
	out, _ := exec.Command("ip", "-o", "link", "show", "master", e.bridge).Output()
	var ports []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			ports = append(ports, strings.TrimSuffix(strings.Split(f[1], "@")[0], ":"))
		}
	}
	return ports
}

// metric returns the value of a gauge or counter, or a histogram's
// sample count, whose labels include want.
func (e *env) metric(name string, want map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}
