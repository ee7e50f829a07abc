package containerde2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// network says where a scenario's pods get their network from.
type network int

const (
	// networkCNI is containerd's CNI mode with this suite's bridge
	// conflist (bridge + host-local, dual-stack).
	networkCNI network = iota
	// networkNRI is the CRI network mode "nri" of the containerd patch:
	// no CNI configuration, the pod network comes from NRI plugins. See
	// criNetworkNRI.
	networkNRI
)

// options say how a containerd instance is set up.
type options struct {
	// nri is the build (hack/containerd.sh NRINET_CONTAINERD_NRI):
	// "upstream" for stock containerd, "compat" for containerd on nrinet.
	nri string
	// network is where pods get their network from.
	network network
	// portmap chains the CNI portmap plugin (nftables backend) after the
	// bridge in the conflist of CNI mode, as a CNI setup that publishes
	// host ports does (critest's port mapping specs).
	portmap bool
	// requiredNetworkPlugins is the NRI configuration's
	// required_network_plugins (network mode nri): the plugins that must
	// be connected before a pod can be created.
	requiredNetworkPlugins []string
	// metrics serves containerd's Prometheus metrics on a loopback port
	// (c.metricsAddr).
	metrics bool
	// registryConfigPath is the CRI image service's registry config_path
	// (hosts.toml files, see registry.writeHosts); empty: none.
	registryConfigPath string
	// nriRequestTimeout is the NRI configuration's plugin_request_timeout
	// (containerd's default, 2 s, when zero).
	nriRequestTimeout time.Duration
	// integration sets the instance up as containerd's CRI integration
	// tests expect it (integration_test.go): the images under the names the
	// tests use, containerd's default sandbox image, the CI configuration's
	// CRI settings and debug log, and containerd under a name of its own
	// (procName), started again whenever it exits (keepalive).
	integration bool
}

// Readiness and shutdown deadlines.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// containerd is one containerd process with everything of its own under
// dir: root, state, sockets, configuration, CNI configuration and IPAM
// state, NRI socket and plugin directories, runc's state, shim sockets and
// pod logs. Names it must put on the host (bridge, CNI network, cgroup
// parent) carry token. Cleanup (registered by startContainerd) removes the
// pods through CRI, stops the plugins and containerd, then checks that
// nothing of this instance is left on the host (see leaks_test.go).
type containerd struct {
	t     testing.TB
	opts  options
	build *build
	token string
	dir   string

	config, sock, nriSock, crictlConfig string
	// cri runs crictl against this containerd.
	cri *testutil.Crictl
	// metricsAddr is where containerd serves its metrics (opts.metrics).
	metricsAddr string
	// cgroupParent is every pod's cgroup parent.
	cgroupParent string
	// cni is containerd's CNI network (networkCNI only).
	cni *cniNet
	// pluginNets are CNI networks of network plugins the test started
	// (nri-cni); the leak check covers them as it covers cni.
	pluginNets []*cniNet

	log    *testutil.LogBuffer
	cmd    *exec.Cmd
	exited chan struct{}
	// procName, when set, is the name containerd runs under: a symlink in
	// dir to the build's binary, unique to the instance, so that a test
	// that finds containerd by name (pkill -x, pidof) finds this one only.
	procName string
	// keepalive, when set, runs containerd instead of cmd (opts.integration).
	keepalive *keepalive

	// before is the host as it was before the instance started.
	before snapshot
	// What the instance created, for the leak check: pod sandbox and
	// container IDs, the pods' network namespace paths and host veths.
	seen *seen

	// extraBridges are bridges a network plugin of the test may create;
	// cleanup checks that they have no ports and deletes them.
	extraBridges []string

	// plugins are the plugin processes the test started; cleanup stops
	// them before containerd.
	plugins []*pluginProc
}

// ipNet is a dual-stack pod network: a subnet of each family and the
// gateway of each.
type ipNet struct {
	v4, v6   netip.Prefix
	gw4, gw6 netip.Addr
}

// newIPNet picks free subnets (pickSubnets) other than those of avoid;
// the gateways are the subnets' first addresses.
func newIPNet(t testing.TB, avoid ...ipNet) ipNet {
	t.Helper()
	for {
		v4, v6 := pickSubnets(t)
		if !slices.ContainsFunc(avoid, func(n ipNet) bool { return n.v4 == v4 || n.v6 == v6 }) {
			return ipNet{v4: v4, v6: v6, gw4: v4.Addr().Next(), gw6: v6.Addr().Next()}
		}
	}
}

// cniNet is a CNI bridge network: a conflist in its own directory.
type cniNet struct {
	ipNet
	name    string // the conflist's network name
	bridge  string
	dataDir string // host-local's state
	confDir string
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startContainerd sets up and starts containerd, waits until its CRI
// service answers (and, in CNI mode, reports the network ready), and
// imports the pause and busybox images.
func startContainerd(t testing.TB, opts options) *containerd {
	t.Helper()
	skipUnlessEnabled(t)
	b := env.builds.get(t.Context(), t, opts.nri)
	token := randHex(4)
	// Short: the shim socket directory must be at most 42 characters.
	dir := filepath.Join(os.TempDir(), "nrce-"+token)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := &containerd{
		t: t, opts: opts, build: b, token: token, dir: dir,
		config: filepath.Join(dir, "containerd.toml"), sock: filepath.Join(dir, "c.sock"),
		nriSock: filepath.Join(dir, "nri.sock"), crictlConfig: filepath.Join(dir, "crictl.yaml"),
		cgroupParent: "/nrinet-ce2e-" + token,
		log:          &testutil.LogBuffer{},
		seen:         &seen{},
	}
	if len(c.shimSocketDir()) > 42 {
		t.Fatalf("shim socket directory %s is longer than containerd's limit of 42 characters: set TMPDIR to a shorter path", c.shimSocketDir())
	}
	c.before = takeSnapshot()
	t.Cleanup(c.cleanup)

	for _, d := range []string{"root", "state", "tmp", "opt", "runc", "nri-plugins", "nri-conf", "logs", c.shimSocketDir()} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if opts.network == networkCNI {
		c.cni = newCNINet(t, dir, "nrinet-ce2e", "nrce", token, opts.portmap)
	}
	if opts.metrics {
		c.metricsAddr = freeAddr(t)
	}
	if opts.integration {
		// The integration tests run in a mount namespace of their own
		// (runIntegrationTests) and look into the pods' network
		// namespaces, which containerd mounts under dir: dir is made a
		// shared mount, so that those mounts propagate there (the host's
		// root mount may be private, as it is here). removeOwn unmounts it.
		if err := shareMount(dir); err != nil {
			t.Fatal(err)
		}
		// At most 15 characters, the kernel's limit for a process name,
		// which pkill -x matches.
		c.procName = "ctrd-" + token
		if err := os.Symlink(filepath.Join(b.bin, "containerd"), filepath.Join(dir, c.procName)); err != nil {
			t.Fatal(err)
		}
	}
	c.writeFile(c.config, c.configTOML())
	cri, err := testutil.NewCrictl(env.crictl, c.sock, c.dir, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.cri, c.crictlConfig = cri, cri.Config

	start := time.Now()
	c.start()
	c.waitReady()
	t.Logf("containerd %s (%s) ready in %v", b.version, b.nri, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	for _, img := range c.images() {
		c.importImage(img.archive, img.ref)
	}
	t.Logf("images imported in %v", time.Since(start).Round(time.Millisecond))
	return c
}

// image is an OCI image archive and the name it holds.
type image struct{ archive, ref string }

// images are the instance's images, pause (the sandbox image) first: the
// suite's own, or in integration mode the same images under the names
// containerd's integration tests use.
func (c *containerd) images() []image {
	if c.opts.integration {
		return []image{{env.integrationPauseTar, integrationPauseRef}, {env.integrationBusyboxTar, integrationBusyboxRef}}
	}
	return []image{{env.pauseTar, pauseRef}, {env.busyboxTar, busyboxRef}}
}

func (c *containerd) writeFile(path, content string) {
	c.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// podCgroupParent is the cgroup parent of the pods the suite runs: none
// in integration mode, as containerd's integration tests set none (runc
// then puts them under /k8s.io), else c.cgroupParent.
func (c *containerd) podCgroupParent() string {
	if c.opts.integration {
		return ""
	}
	return c.cgroupParent
}

// shimSocketDir is where the shims put their sockets (socket_dir), instead
// of /run/containerd/s.
func (c *containerd) shimSocketDir() string { return filepath.Join(c.dir, "s") }

// configTOML is containerd's configuration (version 3, containerd v2.x):
// every directory under c.dir, the pause image as the sandbox image, the
// NRI socket and plugin directories of this instance, runc's state under
// c.dir, and restrict_oom_score_adj (the test may lack CAP_SYS_RESOURCE).
func (c *containerd) configTOML() string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	p := func(name string) string { return q(filepath.Join(c.dir, name)) }
	cni, mode, nriLines := "", "", ""
	// The CNI configuration stays when network mode nri follows CNI mode
	// on the same instance (scenario 6): pods CNI set up are torn down by
	// CNI in any mode.
	if c.cni != nil {
		cni = fmt.Sprintf(`
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%s]
      conf_dir = %s
      max_conf_num = 1`, q(env.cniBin), q(c.cni.confDir))
	}
	if c.opts.network == networkNRI {
		mode, nriLines = criNetworkNRI(c)
	}
	metrics := ""
	if c.metricsAddr != "" {
		metrics = fmt.Sprintf("\n[metrics]\n  address = %s\n", q(c.metricsAddr))
	}
	if d := c.opts.nriRequestTimeout; d != 0 {
		nriLines += fmt.Sprintf("\n    plugin_request_timeout = %s", q(d.String()))
	}
	registry := ""
	if c.opts.registryConfigPath != "" {
		registry = fmt.Sprintf("\n    [plugins.'io.containerd.cri.v1.images'.registry]\n      config_path = %s", q(c.opts.registryConfigPath))
	}
	// What containerd's CI adds for its CRI integration tests
	// (script/test/utils.sh), in configuration version 3.
	snapshotter, runtimeExtra := "", ""
	if c.opts.integration {
		snapshotter = `
  [plugins.'io.containerd.snapshotter.v1.overlayfs']
    slow_chown = true
`
		runtimeExtra = "\n    drain_exec_sync_io_timeout = '10s'"
	}
	return fmt.Sprintf(`version = 3
root = %s
state = %s
temp = %s
%s
[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = %s

  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = %s

  [plugins.'io.containerd.nri.v1.nri']
    disable = false
    socket_path = %s
    plugin_path = %s
    plugin_config_path = %s%s

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
%s
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %s%s

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true%s%s
    netns_mounts_under_state_dir = true
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          Root = %s%s
`, p("root"), p("state"), p("tmp"), metrics, q(c.sock), q(c.sock+".ttrpc"), p("opt"), q(c.shimSocketDir()),
		q(c.nriSock), p("nri-plugins"), p("nri-conf"), nriLines, snapshotter, q(c.images()[0].ref), registry, mode, runtimeExtra, p("runc"), cni)
}

// criNetworkNRI returns the configuration lines of networkNRI: the
// containerd patch's CRI network_mode "nri" (pod networks from NRI
// plugins, no CNI), for the CRI runtime table, and the NRI table's
// required_network_plugins.
func criNetworkNRI(c *containerd) (runtime, nri string) {
	var names []string
	for _, n := range c.opts.requiredNetworkPlugins {
		b, _ := json.Marshal(n)
		names = append(names, string(b))
	}
	return "\n    network_mode = 'nri'",
		"\n    required_network_plugins = [" + strings.Join(names, ", ") + "]"
}

// command returns the command that runs containerd, its output going to
// c.log; in integration mode under c.procName, with the debug log of
// containerd's CI.
func (c *containerd) command() *exec.Cmd {
	bin, level := filepath.Join(c.build.bin, "containerd"), "info"
	if c.procName != "" {
		bin = filepath.Join(c.dir, c.procName)
	}
	if c.opts.integration {
		level = "debug"
	}
	cmd := exec.Command(bin, "--config", c.config, "--log-level", level)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	// The shim is found on PATH; runc too (Debian puts it in /usr/sbin).
	cmd.Env = append(os.Environ(), "PATH="+c.build.bin+":"+os.Getenv("PATH")+":/usr/sbin:/sbin")
	return cmd
}

// start runs containerd; in integration mode under a keepalive, which
// starts it again whenever it exits.
func (c *containerd) start() {
	c.t.Helper()
	if c.opts.integration {
		c.keepalive = startKeepalive(c.command, integrationRestartWait, func(format string, args ...any) {
			fmt.Fprintf(c.log, "nrinet-e2e: "+format+"\n", args...)
		})
		// Closed only if the loop ends on its own: containerd could not start.
		c.exited = c.keepalive.done
		return
	}
	cmd := c.command()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	exited := c.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

// waitReady polls crictl info until the CRI service answers, and in CNI
// mode until it reports NetworkReady.
func (c *containerd) waitReady() {
	c.t.Helper()
	var last string
	err := testutil.Poll(readyTimeout, 50*time.Millisecond, func() error {
		select {
		case <-c.exited:
			return testutil.Abort(fmt.Errorf("containerd exited: %v", c.exitStatus()))
		default:
		}
		out, errOut, err := c.crictl("info")
		if err != nil {
			last = errOut
			return errors.New("containerd not ready")
		}
		info, perr := parseInfo(out)
		if perr != nil {
			return testutil.Abort(perr)
		}
		if !info.runtimeReady || (c.opts.network == networkCNI && !info.networkReady) {
			last = out
			return errors.New("containerd not ready")
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%v; last crictl info:\n%s\ncontainerd log:\n%s", err, last, c.log)
	}
}

// criInfo is what waitReady reads of crictl info.
type criInfo struct {
	runtimeReady, networkReady bool
	// networkMessage is the NetworkReady condition's reason and message.
	networkMessage string
}

func parseInfo(out string) (criInfo, error) {
	st, err := testutil.ParseRuntimeStatus([]byte(out))
	if err != nil {
		return criInfo{}, fmt.Errorf("%v\n%s", err, out)
	}
	var i criInfo
	i.runtimeReady, _, _, _ = st.Condition("RuntimeReady")
	ready, reason, msg, _ := st.Condition("NetworkReady")
	i.networkReady, i.networkMessage = ready, strings.TrimSpace(reason+": "+msg)
	return i, nil
}

// ctr runs containerd's ctr against this instance in the k8s.io namespace
// (CRI's).
func (c *containerd) ctr(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.build.bin, "ctr"), append([]string{"--address", c.sock, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// importImage imports an OCI image archive and waits until CRI lists the
// image.
func (c *containerd) importImage(archive, ref string) {
	c.t.Helper()
	if out, err := c.ctr("images", "import", archive); err != nil {
		c.t.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
	}
	if err := testutil.Poll(readyTimeout, 20*time.Millisecond, func() error {
		if _, errOut, err := c.crictl("inspecti", ref); err != nil {
			return fmt.Errorf("crictl inspecti %s after ctr images import: %v\n%s", ref, err, errOut)
		}
		return nil
	}); err != nil {
		c.t.Fatal(err)
	}
}

// exitStatus says how containerd ended, once c.exited is closed.
func (c *containerd) exitStatus() string {
	if c.keepalive != nil {
		return fmt.Sprintf("keepalive ended: %v", c.keepalive.err)
	}
	return c.cmd.ProcessState.String()
}

// stop ends containerd: SIGTERM, and SIGKILL after stopTimeout.
func (c *containerd) stop() {
	if c.keepalive != nil {
		if err := c.keepalive.stop(stopTimeout); err != nil {
			c.t.Error(err)
		}
		c.keepalive = nil
		return
	}
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(stopTimeout):
		c.t.Errorf("containerd did not exit within %v of SIGTERM; killing it", stopTimeout)
		c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

// cleanup removes every pod through CRI, stops the plugins and
// containerd, checks the host against the snapshot taken before the
// instance started (reporting and removing anything of it that is left),
// then removes what the test itself made: the bridge, the cgroup parent
// and c.dir.
func (c *containerd) cleanup() {
	t := c.t
	if c.running() {
		c.removePods()
	}
	for _, p := range c.plugins {
		p.Stop(pluginTimeout)
	}
	c.stop()
	if t.Failed() {
		t.Logf("containerd log:\n%s", c.log)
		for _, p := range c.plugins {
			t.Logf("plugin %s (%v): stdout:\n%s\nstderr:\n%s", p.Name, p.Cmd.ProcessState, p.Stdout, p.Stderr)
		}
	}
	// Pods and containers the test did not report are in the log.
	c.seen.add(loggedIDs(c.log.String())...)
	for _, l := range c.scope().leaks(c.before, takeSnapshot()) {
		t.Errorf("left behind: %s", l)
		if err := l.remove(); err != nil {
			t.Errorf("removing %s: %v", l, err)
		}
	}
	for _, err := range c.scope().removeOwn() {
		t.Error(err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		t.Errorf("removing %s: %v", c.dir, err)
	}
}

// running reports whether containerd was started and has not exited.
func (c *containerd) running() bool {
	if c.keepalive != nil {
		return c.keepalive.running()
	}
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// removePods stops and removes every pod sandbox through CRI, as the
// kubelet would, before containerd stops.
func (c *containerd) removePods() {
	out, errOut, err := c.crictl("pods", "-q")
	if err != nil {
		c.t.Errorf("crictl pods: %v\n%s", err, errOut)
		return
	}
	for _, id := range strings.Fields(out) {
		if _, errOut, err := c.crictl("rmp", "-f", id); err != nil {
			c.t.Errorf("crictl rmp -f %s: %v\n%s", id, err, errOut)
		}
	}
}

// newCNINet writes a bridge conflist (bridge + host-local, dual-stack,
// no masquerading; with portmap, then portmap on nftables) named
// name-token with a bridge named bridgePrefix+token, on free subnets other
// than those of avoid, into a directory of its own under dir; host-local
// keeps its state under dir too.
func newCNINet(t testing.TB, dir, name, bridgePrefix, token string, portmap bool, avoid ...ipNet) *cniNet {
	t.Helper()
	n := &cniNet{
		ipNet: newIPNet(t, avoid...),
		name:  name + "-" + token, bridge: bridgePrefix + token,
	}
	n.dataDir, n.confDir = filepath.Join(dir, n.name+"-ipam"), filepath.Join(dir, n.name+"-conf")
	plugins := []any{map[string]any{
		"type": "bridge", "bridge": n.bridge, "isGateway": true, "ipMasq": false,
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": n.dataDir,
			"ranges": []any{
				[]any{map[string]any{"subnet": n.v4.String(), "gateway": n.gw4.String()}},
				[]any{map[string]any{"subnet": n.v6.String(), "gateway": n.gw6.String()}},
			},
			"routes": []any{map[string]any{"dst": "0.0.0.0/0"}, map[string]any{"dst": "::/0"}},
		},
	}}
	if portmap {
		// The machine has nft and no iptables.
		plugins = append(plugins, map[string]any{"type": "portmap", "backend": "nftables", "capabilities": map[string]any{"portMappings": true}})
	}
	conf := map[string]any{"cniVersion": "1.0.0", "name": n.name, "plugins": plugins}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.confDir, "10-"+n.name+".conflist"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}
