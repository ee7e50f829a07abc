package cni_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
	"github.com/nrinet/nrinet/runtime"
)

// randHex returns n random hex digits.
func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// randName returns a unique name for a bridge or netns: "nrcni-" and six
// hex digits, short enough for an interface name.
func randName() string { return "nrcni-" + randHex(6) }

type logBuffer = testutil.LogBuffer

// newLogger returns a debug logger into a buffer that is printed if the
// test fails.
func newLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// testNet is a CNI network on its own bridge, with its configuration,
// host-local data and libcni cache in temp dirs.
type testNet struct {
	name, bridge, cniVersion string
	subnets                  []string
	confDir, dataDir         string
	cacheDir, binDir         string
	forceAddress             bool // the bridge replaces its gateway address when the subnet changes
	// noPortmap leaves portmap out of the list; extra plugins are
	// chained after it; extraBinDirs are searched after binDir.
	noPortmap    bool
	extra        []map[string]any
	extraBinDirs []string
}

// newTestNet writes a conflist for a bridge network (isGateway, no
// masquerading, host-local IPAM over subnets, default routes, and portmap
// when iptables is installed) and deletes the bridge when the test ends.
// It needs root only later, when pods are added.
func newTestNet(t testing.TB, cniVersion string, subnets ...string) *testNet {
	t.Helper()
	tn := &testNet{
		name: "nrinet-test", bridge: randName(), cniVersion: cniVersion, subnets: subnets,
		confDir: t.TempDir(), dataDir: t.TempDir(), cacheDir: t.TempDir(),
		binDir: testutil.CNIPluginDir(t),
	}
	// Registered before any netns is created, so it runs after they are gone.
	t.Cleanup(func() { testutil.DeleteLink(tn.bridge) })
	tn.writeConflist(t, "10-nrinet-test.conflist", subnets...)
	return tn
}

// writeConflist writes the network's conflist, with these subnets, to
// file in the configuration directory.
func (tn *testNet) writeConflist(t testing.TB, file string, subnets ...string) {
	t.Helper()
	var ranges [][]map[string]string
	routes := []map[string]string{}
	for _, s := range subnets {
		ranges = append(ranges, []map[string]string{{"subnet": s}})
		dst := "0.0.0.0/0"
		if netip.MustParsePrefix(s).Addr().Is6() {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	plugins := []any{map[string]any{
		"type": "bridge", "bridge": tn.bridge, "isGateway": true, "ipMasq": false, "forceAddress": tn.forceAddress,
		"ipam": map[string]any{"type": "host-local", "dataDir": tn.dataDir, "ranges": ranges, "routes": routes},
	}}
	if _, err := exec.LookPath("iptables"); err == nil && !tn.noPortmap {
		plugins = append(plugins, map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}})
	}
	for _, p := range tn.extra {
		plugins = append(plugins, p)
	}
	writeJSON(t, filepath.Join(tn.confDir, file), map[string]any{
		"cniVersion": tn.cniVersion, "name": tn.name, "plugins": plugins,
	})
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tn *testNet) config() cni.Config {
	return cni.Config{ConfDir: tn.confDir, BinDirs: append([]string{tn.binDir}, tn.extraBinDirs...), CacheDir: tn.cacheDir}
}

// addressFiles lists host-local's reservations: files named after an IP.
func (tn *testNet) addressFiles(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(tn.dataDir, tn.name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// bridgePorts lists the interfaces attached to the network's bridge.
func (tn *testNet) bridgePorts(t testing.TB) []string {
	t.Helper()
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal([]byte(testutil.Run(t, "ip", "-j", "link", "show", "master", tn.bridge)), &links); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		out = append(out, l.Name)
	}
	return out
}

// newPod returns a pod in a new network namespace, which is deleted when
// the test ends, and the namespace's name.
func newPod(t testing.TB, n int) (*api.PodSandbox, string) {
	t.Helper()
	ns := randName()
	path := testutil.NewNetNS(t, ns)
	return &api.PodSandbox{
		Id:        randHex(32),
		Name:      fmt.Sprintf("pod%d", n),
		Uid:       randHex(8) + "-" + randHex(4),
		Namespace: "default",
		Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{
			{Type: api.NetworkNamespace, Path: path},
		}},
	}, ns
}

// eth0Addrs returns the global addresses of eth0 in the namespace, as
// bare IPs.
func eth0Addrs(t testing.TB, ns string) []string {
	t.Helper()
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
			Scope string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(testutil.Run(t, "ip", "-n", ns, "-j", "addr", "show", "dev", "eth0")), &links); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Scope == "global" {
				out = append(out, a.Local)
			}
		}
	}
	return out
}

// ping pings addr from the namespace, trying a few times (a new IPv6
// address may still be settling).
func ping(t testing.TB, ns, addr string) {
	t.Helper()
	var err error
	for range 3 {
		if err = testutil.Ping(ns, addr); err == nil {
			return
		}
	}
	t.Error(err)
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// startRuntime starts a runtime that launches the nri-cni executable as
// the pre-installed plugin 10-cni, configured for tn, and waits until it
// has joined.
func startRuntime(t testing.TB, tn *testNet) (*runtime.Runtime, *logBuffer) {
	t.Helper()
	rt, logs := launchRuntime(t, tn.config())
	if !joined(rt) {
		t.Fatalf("plugin 10-cni did not join; runtime logs:\n%s", logs)
	}
	return rt, logs
}

// launchRuntime starts a runtime that launches the nri-cni executable as
// the pre-installed plugin 10-cni with cfg in 10-cni.conf, with opts
// added to its options. Start returns once the plugin has joined or
// failed.
func launchRuntime(t testing.TB, cfg cni.Config, opts ...runtime.Option) (*runtime.Runtime, *logBuffer) {
	t.Helper()
	if nriCNIBinary == "" {
		t.Fatal("nri-cni was not built")
	}
	pluginDir, confDir := t.TempDir(), t.TempDir()
	if err := os.Symlink(nriCNIBinary, filepath.Join(pluginDir, "10-cni")); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(confDir, "10-cni.conf"), cfg)
	logger, logs := newLogger(t)
	base := []runtime.Option{
		runtime.WithPluginPath(pluginDir),
		runtime.WithPluginConfigPath(confDir),
		runtime.WithoutExternalPlugins(),
		runtime.WithRequestTimeout(30 * time.Second),
		runtime.WithStatusTimeout(30 * time.Second),
		runtime.WithLogger(logger),
	}
	rt, err := runtime.New("nrcni-test-runtime", "v0.0.1", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt.Stop(ctx)
	})
	return rt, logs
}

// joined reports whether 10-cni is among the runtime's plugins.
func joined(rt *runtime.Runtime) bool {
	for _, p := range rt.Plugins() {
		if p.Name == "10-cni" {
			return true
		}
	}
	return false
}

// fakePluginScript is a fake CNI plugin: it answers VERSION with every
// version from 0.3.1 to 1.1.0 (and any other command the same way).
const fakePluginScript = "#!/bin/sh\necho '{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}'\n"

// fakePluginDir returns a directory with fake CNI plugins that answer
// only VERSION, for tests that load configurations without running them.
func fakePluginDir(t testing.TB, types ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, typ := range types {
		if err := os.WriteFile(filepath.Join(dir, typ), []byte(fakePluginScript), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustContain(t testing.TB, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}
