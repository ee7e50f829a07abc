package crioe2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
)

// Timeouts of the suite.
const (
	readyTimeout  = 60 * time.Second // CRI-O answering crictl version
	stopTimeout   = 30 * time.Second // CRI-O exiting after SIGTERM
	pluginTimeout = 15 * time.Second // a plugin exiting
	netTimeout    = 30 * time.Second // NetworkReady turning
)

// crioOptions say how to start a CRI-O.
type crioOptions struct {
	// nri is what CRI-O is built against: upstream (stock CRI-O) or
	// compat (on nrinet, with its patch series).
	nri string
	// mode is network_mode: "" (stock's default), "cni" or "nri".
	mode string
	// required is required_network_plugins.
	required []string
	// nriRequestTimeout is nri_plugin_request_timeout; 0 keeps CRI-O's
	// default (2 s).
	nriRequestTimeout time.Duration
}

// crio is one CRI-O process of the suite, with every directory under dir.
type crio struct {
	t       *testing.T
	build   *crioBuild
	opts    crioOptions
	dir     string
	token   string
	sock    string
	nriSock string
	cgroup  string // the pods' cgroup parent
	cni     *bridgeNet
	bridges []string // bridges the test made or had made
	// ipamDirs are the host-local data directories of the CNI networks.
	ipamDirs []string
	// podnetSubnets are nri-podnet's subnets, once it was started; its
	// allocator is podnetDB.
	podnetSubnets []netip.Prefix

	proc    *testutil.Proc
	log     *testutil.LogBuffer
	plugins []*testutil.Proc
	// cri runs crictl against this CRI-O.
	cri *testutil.Crictl
}

// startCrio starts CRI-O as opts say, with a CNI bridge network of its
// own; t's cleanup removes every pod, stops it and checks that nothing is
// left.
func startCrio(t *testing.T, opts crioOptions) *crio {
	t.Helper()
	c := &crio{t: t, build: crioBinaries(t, opts.nri), opts: opts, token: fmt.Sprintf("%06x", rand.N(1<<24))}
	dir, err := os.MkdirTemp("", "nrcrio-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	c.sock, c.nriSock = filepath.Join(dir, "crio.sock"), filepath.Join(dir, "nri.sock")
	c.cgroup = "/nrinet-crio-e2e-" + c.token
	c.cni = newBridgeNet(t, filepath.Join(dir, "cni"), "nrinet-crio-e2e", "nrco"+c.token, 0)
	c.bridges = append(c.bridges, c.cni.bridge)
	c.ipamDirs = append(c.ipamDirs, c.cni.ipamDir())
	t.Cleanup(c.cleanup)
	if c.cri, err = testutil.NewCrictl(env.crictl, c.sock, dir, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	c.writeFile("policy.json", `{"default": [{"type": "insecureAcceptAnything"}]}`)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, testutil.RuncWrapperName)); err != nil {
		t.Fatal(err)
	}
	c.writeConfig()
	c.start()
	return c
}

// writeConfig writes CRI-O's configuration: crio.conf (config) and, for
// a network mode, the drop-in crio.conf.d/10-nri-network.conf, as an
// operator sets it (docs/crio.md).
func (c *crio) writeConfig() {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Join(c.dir, "crio.conf.d"), 0o700); err != nil {
		c.t.Fatal(err)
	}
	c.writeFile("crio.conf", c.config())
	dropIn := filepath.Join("crio.conf.d", "10-nri-network.conf")
	if c.opts.mode == "" {
		os.Remove(filepath.Join(c.dir, dropIn))
		return
	}
	network := fmt.Sprintf("[crio.network]\nnetwork_mode = %q\n", c.opts.mode)
	if len(c.opts.required) > 0 {
		q, _ := json.Marshal(c.opts.required)
		network += fmt.Sprintf("required_network_plugins = %s\n", q)
	}
	c.writeFile(dropIn, network)
}

// config is CRI-O's configuration file: every path under c.dir, vfs
// storage, cgroupfs, runc (behind testutil.RuncWrapperName) with conmon, the
// suite's pause image, NRI on c.nriSock. The suite's registry (plain HTTP)
// is in the registries.conf start writes; the network mode in the drop-in
// writeConfig writes.
func (c *crio) config() string {
	d := c.dir
	var nri string
	if c.opts.nriRequestTimeout > 0 {
		nri = fmt.Sprintf("nri_plugin_request_timeout = %q\n", c.opts.nriRequestTimeout)
	}
	return fmt.Sprintf(`[crio]
root = %[1]q
runroot = %[2]q
storage_driver = "vfs"
log_dir = %[3]q
version_file = %[4]q
version_file_persist = %[5]q
clean_shutdown_file = %[6]q

[crio.api]
listen = %[7]q
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
conmon = %[8]q
container_exits_dir = %[9]q
container_attach_socket_dir = %[10]q
namespaces_dir = %[11]q
pinns_path = %[12]q
hooks_dir = [%[13]q]

[crio.runtime.runtimes.runc]
runtime_path = %[14]q
runtime_root = %[15]q
monitor_path = %[8]q

[crio.image]
signature_policy = %[16]q
pause_image = %[17]q
# the registry is in registries.conf (insecure): %[18]s

[crio.network]
network_dir = %[19]q
plugin_dirs = [%[20]q]

[crio.nri]
enable_nri = true
nri_listen = %[21]q
nri_plugin_dir = %[22]q
nri_plugin_config_dir = %[23]q
%[24]s`, filepath.Join(d, "root"), filepath.Join(d, "run"), filepath.Join(d, "logs"), filepath.Join(d, "run", "version"),
		filepath.Join(d, "version"), filepath.Join(d, "clean.shutdown"), c.sock, env.conmon,
		filepath.Join(d, "exits"), filepath.Join(d, "attach"), filepath.Join(d, "ns"),
		filepath.Join(c.build.bin, "pinns"), filepath.Join(d, "hooks"), filepath.Join(d, testutil.RuncWrapperName), filepath.Join(d, "runc"),
		filepath.Join(d, "policy.json"), env.pauseRef, env.registry.Addr(),
		c.cni.confDir, env.cniBin, c.nriSock, filepath.Join(d, "nri-plugins"), filepath.Join(d, "nri-conf"), nri)
}

// writeFile writes content to name under c.dir.
func (c *crio) writeFile(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// start runs CRI-O and waits until it answers crictl version.
func (c *crio) start() {
	c.t.Helper()
	for _, d := range []string{"hooks", "nri-plugins", "nri-conf", "logs", "registries.d"} {
		os.MkdirAll(filepath.Join(c.dir, d), 0o700)
	}
	if c.log == nil {
		c.log = &testutil.LogBuffer{}
	}
	// The suite's registry, plain HTTP, also in place of critest's.
	registries := c.writeFile("registries.conf", fmt.Sprintf("[[registry]]\nlocation = %[1]q\ninsecure = true\n\n"+
		"[[registry]]\nprefix = %[2]q\nlocation = %[1]q\ninsecure = true\n", env.registry.Addr(), critest.TestImageHost))
	cmd := exec.Command(filepath.Join(c.build.bin, "crio"), "--config", filepath.Join(c.dir, "crio.conf"),
		"--config-dir", filepath.Join(c.dir, "crio.conf.d"), "--log-level", "info",
		"--registries-conf", registries, "--registries-conf-dir", filepath.Join(c.dir, "registries.d"))
	cmd.Stdout, cmd.Stderr = c.log, c.log
	proc, err := testutil.StartCmd("crio", cmd)
	if err != nil {
		c.t.Fatalf("starting crio: %v", err)
	}
	c.proc = proc
	err = testutil.Poll(readyTimeout, 100*time.Millisecond, func() error {
		_, errOut, err := c.crictl("version")
		switch {
		case err == nil:
			return nil
		case !proc.Running():
			return testutil.Abort(fmt.Errorf("crio exited (%v) before it was ready", cmd.ProcessState))
		}
		return fmt.Errorf("crictl version: %v: %s", err, errOut)
	})
	if err != nil {
		c.t.Fatalf("%v\n%s", err, c.log)
	}
}

// stop ends CRI-O: SIGTERM, and SIGKILL after stopTimeout (an error).
func (c *crio) stop() {
	if c.proc == nil {
		return
	}
	if err := c.proc.Stop(stopTimeout); err != nil {
		c.t.Error(err)
	}
	c.proc = nil
}

// killRestart kills CRI-O with SIGKILL (conmon and the pods live on) and
// starts it again on the same configuration and state.
func (c *crio) killRestart() {
	c.t.Helper()
	c.proc.Kill()
	start := time.Now()
	c.start()
	c.t.Logf("crio killed and restarted in %v", time.Since(start).Round(time.Millisecond))
}

// running reports whether CRI-O runs.
func (c *crio) running() bool {
	return c.proc != nil && c.proc.Running()
}

// cleanup removes every pod through CRI, stops the plugins and CRI-O,
// checks that no pod network namespace, mount, pod interface or cgroup of
// the instance is left, and removes what the test made.
func (c *crio) cleanup() {
	t := c.t
	if c.running() {
		out, _, _ := c.crictl("pods", "-q")
		for _, id := range strings.Fields(out) {
			if _, errOut, err := c.crictl("rmp", "-f", id); err != nil {
				t.Errorf("crictl rmp -f %s: %v\n%s", id, err, errOut)
			}
		}
		// Images pulled into the instance's storage go with c.dir.
	}
	for _, p := range c.plugins {
		p.Stop(pluginTimeout)
	}
	c.stop()
	if t.Failed() {
		t.Logf("crio log:\n%s", c.log)
		for _, p := range c.plugins {
			t.Logf("plugin %s (%v): stdout:\n%s\nstderr:\n%s", p.Name, p.Cmd.ProcessState, p.Stdout, p.Stderr)
		}
	}
	for _, l := range c.leaks() {
		t.Errorf("left behind: %s", l)
	}
	// CRI-O's storage leaves its overlay-free vfs layers and shm mounts
	// only under c.dir; unmount whatever is still mounted there.
	for _, m := range mountsUnder(c.dir) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	for _, b := range c.bridges {
		exec.Command("ip", "link", "del", b).Run()
	}
	removeCgroup(c.cgroup)
	if err := os.RemoveAll(c.dir); err != nil {
		t.Errorf("removing %s: %v", c.dir, err)
	}
}

// leaks lists what the instance's pods left after all were removed:
// network namespaces, mounts of their namespaces, ports on the bridges,
// addresses host-local still holds, and cgroups under the pods' parent.
func (c *crio) leaks() []string {
	var out []string
	if names, _ := filepath.Glob(filepath.Join(c.dir, "ns", "*", "*")); len(names) > 0 {
		out = append(out, fmt.Sprintf("namespace files %v", names))
	}
	for _, m := range mountsUnder(filepath.Join(c.dir, "ns")) {
		out = append(out, "mount "+m)
	}
	for _, b := range c.bridges {
		if ports, _ := os.ReadDir(filepath.Join("/sys/class/net", b, "brif")); len(ports) > 0 {
			var names []string
			for _, p := range ports {
				names = append(names, p.Name())
			}
			out = append(out, fmt.Sprintf("ports %v on bridge %s", names, b))
		}
	}
	for _, dir := range c.ipamDirs {
		// host-local keeps one file per allocated address, named by it.
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		for _, f := range files {
			if _, err := netip.ParseAddr(filepath.Base(f)); err == nil {
				out = append(out, "host-local allocation "+f)
			}
		}
	}
	if c.podnetSubnets != nil {
		out = append(out, c.podnetAllocations()...)
	}
	if entries, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", c.cgroup)); len(entries) > 0 {
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, "cgroup "+filepath.Join(c.cgroup, e.Name()))
			}
		}
	}
	return out
}

// podnetDB is nri-podnet's allocator database.
func (c *crio) podnetDB() string { return filepath.Join(c.dir, "podnet", "ipam.db") }

// podnetAllocations lists what nri-podnet's allocator still holds (the
// plugin has stopped: the database is not locked).
func (c *crio) podnetAllocations() []string {
	a, err := ipam.Open(c.podnetDB(), ipam.Config{Subnets: c.podnetSubnets})
	if err != nil {
		return []string{fmt.Sprintf("nri-podnet's allocator %s cannot be read: %v", c.podnetDB(), err)}
	}
	defer a.Close()
	allocs, err := a.Allocations()
	if err != nil {
		return []string{fmt.Sprintf("nri-podnet's allocator %s: %v", c.podnetDB(), err)}
	}
	var out []string
	for _, al := range allocs {
		out = append(out, fmt.Sprintf("nri-podnet allocation %v", al))
	}
	return out
}

// mountsUnder returns the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	slices.Reverse(out)
	return out
}

// removeCgroup removes the cgroup directory and the empty ones below it.
func removeCgroup(name string) {
	root := filepath.Join("/sys/fs/cgroup", name)
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		os.Remove(d)
	}
}

// crictl runs crictl against this CRI-O.
func (c *crio) crictl(args ...string) (string, string, error) {
	return c.cri.Run(args...)
}

// must runs crictl and fails the test if it fails.
func (c *crio) must(args ...string) string {
	c.t.Helper()
	return strings.TrimSpace(c.cri.Must(c.t, args...))
}

// writeJSON writes v as JSON to name under c.dir.
func (c *crio) writeJSON(name string, v any) string {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.writeFile(name, string(b))
}

// bridgeNet is a CNI bridge network: a conflist (bridge + host-local,
// dual-stack) in confDir with a bridge of its own, on subnets of
// 198.18.0.0/15 and fd00:198:18::/48 chosen from the token.
type bridgeNet struct {
	name, confDir, bridge string
	v4, v6                netip.Prefix
}

// ipamDir is where host-local keeps the network's allocations.
func (b *bridgeNet) ipamDir() string { return b.confDir + "-ipam" }

// newBridgeNet writes the conflist of a bridge network into confDir;
// host-local keeps its state beside it.
func newBridgeNet(t testing.TB, confDir, name, bridge string, salt int) *bridgeNet {
	t.Helper()
	// 198.19.128.0-198.19.254.255: outside the Kubernetes suite's fixed
	// cluster (198.19.0.0/17) and service (198.19.255.0/24) ranges.
	n := 128 + (rand.N(40)*3+salt)%126
	b := &bridgeNet{
		name: name, confDir: confDir, bridge: bridge,
		v4: netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", n)),
		v6: netip.MustParsePrefix(fmt.Sprintf("fd00:198:18:%x::/64", 0x1900+n)),
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": false,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": b.ipamDir(),
				"ranges":  []any{[]any{map[string]any{"subnet": b.v4.String()}}, []any{map[string]any{"subnet": b.v6.String()}}},
				"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}, map[string]any{"dst": "::/0"}},
			},
		}},
	}
	data, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-"+name+".conflist"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}
