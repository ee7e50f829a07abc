package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/sdnotify"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
)

// The pod network of this package's tests.
const (
	subnetV4 = "198.18.211.0/24"
	subnetV6 = "fd00:198:18:211::/64"
	gateway  = "198.18.211.1"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// daemonConfig says how a daemon is set up.
type daemonConfig struct {
	podnet   bool     // install nri-podnet as 10-podnet
	required []string // required network plugins
	// requestTimeout is a plugin's time for each request; zero keeps
	// nrinetd's default.
	requestTimeout time.Duration
	// prepare, if set, runs once the daemon's directories exist (d.dir,
	// with plugins/ and conf.d/ in it) and before nrinetd starts, to
	// install more plugins.
	prepare func(d *daemon)
	// extra is appended to the configuration file (e.g. a [validator]
	// table).
	extra string
}

// daemon is an nrinetd process with its own sockets, plugin and state
// directories and configuration file, driven with crictl.
type daemon struct {
	t       testing.TB
	dir     string
	conf    string
	criSock string
	nriSock string
	bridge  string
	log     *testutil.LogBuffer
	cmd     *exec.Cmd
	exited  chan struct{}
	ids     []string // sandboxes created, whose namespaces cleanup deletes
}

// newDaemon writes a configuration and starts nrinetd.
func newDaemon(t testing.TB, cfg daemonConfig) *daemon {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	dir, err := os.MkdirTemp("", "nrinetd-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{
		t: t, dir: dir, conf: filepath.Join(dir, "nrinetd.toml"),
		criSock: filepath.Join(dir, "cri.sock"), nriSock: filepath.Join(dir, "nri.sock"),
		log: &testutil.LogBuffer{},
	}
	t.Cleanup(func() {
		d.stop()
		for _, id := range d.ids {
			testutil.DeleteNetNS("nrinet-" + id[:12])
		}
		if d.bridge != "" {
			testutil.DeleteLink(d.bridge)
		}
		if t.Failed() {
			t.Logf("nrinetd log:\n%s", d.log)
		}
		os.RemoveAll(dir)
	})
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	for _, p := range []string{pluginDir, confDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.podnet {
		d.bridge = "nrdb" + randHex(4)
		b, _ := json.Marshal(map[string]any{
			"bridge": d.bridge, "subnets": []string{subnetV4, subnetV6}, "mtu": 1400,
			"stateDir": filepath.Join(dir, "podnet"),
		})
		if err := os.WriteFile(filepath.Join(confDir, "10-podnet.conf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(podnetBin, filepath.Join(pluginDir, "10-podnet")); err != nil {
			t.Fatal(err)
		}
	}
	required, _ := json.Marshal(cfg.required)
	if cfg.required == nil {
		required = []byte("[]")
	}
	conf := fmt.Sprintf(`cri_socket = %q
nri_socket = %q
plugin_dir = %q
plugin_config_dir = %q
state_dir = %q
required_network_plugins = %s
http_address = "127.0.0.1:0"
log_level = "debug"
`, d.criSock, d.nriSock, pluginDir, confDir, filepath.Join(dir, "state"), required)
	if cfg.requestTimeout != 0 {
		conf += fmt.Sprintf("request_timeout = %q\n", cfg.requestTimeout)
	}
	conf += cfg.extra
	if cfg.prepare != nil {
		cfg.prepare(d)
	}
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	return d
}

// start runs nrinetd and waits until it says it is ready: READY=1 on
// its NOTIFY_SOCKET, which it sends once its CRI socket accepts
// connections. The socket is read until nrinetd exits.
func (d *daemon) start() {
	d.t.Helper()
	notifyPath := filepath.Join(d.dir, "notify.sock")
	notify, err := sdnotify.Listen(notifyPath)
	if err != nil {
		d.t.Fatal(err)
	}
	cmd := exec.Command(nrinetdBin, "-config", d.conf)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	if err := cmd.Start(); err != nil {
		notify.Close()
		d.t.Fatal(err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	exited := d.exited
	go func() {
		cmd.Wait()
		notify.Close()
		close(exited)
	}()
	select {
	case <-notify.Ready():
	case <-d.exited:
		d.t.Fatalf("nrinetd exited: %v\n%s", cmd.ProcessState, d.log)
	case <-time.After(20 * time.Second):
		d.t.Fatalf("nrinetd was not ready within 20s\n%s", d.log)
	}
}

// stop sends SIGTERM and waits for a graceful exit.
func (d *daemon) stop() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if !d.cmd.ProcessState.Success() {
			d.t.Errorf("nrinetd exited with %v after SIGTERM", d.cmd.ProcessState)
		}
	case <-time.After(15 * time.Second):
		d.t.Errorf("nrinetd did not exit within 15s of SIGTERM")
		d.cmd.Process.Kill()
		<-d.exited
	}
	d.cmd = nil
}

// kill ends nrinetd with SIGKILL, as a crash would, and waits until the
// plugins it launched are gone too (they exit when their connection
// breaks).
func (d *daemon) kill() {
	d.t.Helper()
	pid := d.cmd.Process.Pid
	children := childPids(pid)
	d.cmd.Process.Kill()
	<-d.exited
	d.cmd = nil
	testutil.WaitFor(d.t, "the plugins of the killed nrinetd to exit", 10*time.Second, func() bool {
		for _, c := range children {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", c)); err == nil {
				return false
			}
		}
		return true
	})
}

// childPids lists a process's children.
func childPids(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// crictl runs crictl against the daemon and returns its standard output
// and error.
func (d *daemon) crictl(args ...string) (string, string, error) {
	d.t.Helper()
	ep := "unix://" + d.criSock
	cfg := filepath.Join(d.dir, "crictl.yaml")
	if _, err := os.Stat(cfg); err != nil {
		os.WriteFile(cfg, []byte("runtime-endpoint: "+ep+"\nimage-endpoint: "+ep+"\ntimeout: 10\n"), 0o644)
	}
	cmd := exec.Command(crictlBin, append([]string{"--config", cfg, "--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "10s"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs crictl and fails the test if it fails.
func (d *daemon) must(args ...string) string {
	d.t.Helper()
	out, errOut, err := d.crictl(args...)
	if err != nil {
		d.t.Fatalf("crictl %s: %v\n%s%s\nnrinetd log:\n%s", strings.Join(args, " "), err, out, errOut, d.log)
	}
	return out
}

// writePod writes a pod configuration for crictl runp and returns its
// path.
func (d *daemon) writePod(name string, labels map[string]string, hostNetwork bool) string {
	d.t.Helper()
	uid := name + "-" + randHex(4)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["io.kubernetes.pod.uid"] = uid
	pod := map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": uid, "attempt": 1},
		"labels":   labels,
		"linux":    map[string]any{"cgroup_parent": "/nrinetd-e2e"},
	}
	if hostNetwork {
		pod["linux"] = map[string]any{"cgroup_parent": "/nrinetd-e2e",
			"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}}
	} else {
		pod["hostname"] = name
	}
	b, _ := json.Marshal(pod)
	path := filepath.Join(d.dir, name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
	return path
}

// annotatePod adds annotations to a pod file writePod wrote.
func (d *daemon) annotatePod(path string, annotations map[string]string) {
	d.t.Helper()
	var pod map[string]any
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &pod)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	pod["annotations"] = annotations
	b, _ = json.Marshal(pod)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// runp creates a pod with crictl runp and returns its ID.
func (d *daemon) runp(podFile string) string {
	d.t.Helper()
	id := strings.TrimSpace(d.must("runp", podFile))
	if len(id) != 64 {
		d.t.Fatalf("crictl runp printed %q, want a 64-digit ID", id)
	}
	d.ids = append(d.ids, id)
	return id
}

// inspection is what the tests read of crictl inspectp -o json.
type inspection struct {
	Status struct {
		ID        string            `json:"id"`
		State     string            `json:"state"`
		CreatedAt string            `json:"createdAt"`
		Labels    map[string]string `json:"labels"`
		Network   struct {
			IP            string `json:"ip"`
			AdditionalIPs []struct {
				IP string `json:"ip"`
			} `json:"additionalIps"`
		} `json:"network"`
	} `json:"status"`
	Info struct {
		NetNS string `json:"netns"`
		IPs   []struct {
			IP    string `json:"ip"`
			Owner string `json:"owner"`
		} `json:"ips"`
		Stale map[string]string `json:"stale"`
	} `json:"info"`
}

// ips returns the addresses of an inspection, ip first.
func (i inspection) ips() []string {
	var out []string
	if i.Status.Network.IP != "" {
		out = append(out, i.Status.Network.IP)
	}
	for _, a := range i.Status.Network.AdditionalIPs {
		out = append(out, a.IP)
	}
	return out
}

// inspectp runs crictl inspectp -o json.
func (d *daemon) inspectp(id string) inspection {
	d.t.Helper()
	var i inspection
	out := d.must("inspectp", "-o", "json", id)
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		d.t.Fatalf("crictl inspectp output: %v\n%s", err, out)
	}
	return i
}

// pods runs crictl pods -q with the arguments and returns the IDs.
func (d *daemon) pods(args ...string) []string {
	d.t.Helper()
	return strings.Fields(d.must(append([]string{"pods", "-q"}, args...)...))
}

// podnetOwners lists the pods nri-podnet allocated addresses to; the
// daemon must be stopped.
func (d *daemon) podnetOwners() []string {
	d.t.Helper()
	icfg, err := ipam.ParseConfig([]string{subnetV4, subnetV6}, nil, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	a, err := ipam.Open(filepath.Join(d.dir, "podnet", "ipam.db"), icfg)
	if err != nil {
		d.t.Fatal(err)
	}
	defer a.Close()
	owners, err := a.Owners()
	if err != nil {
		d.t.Fatal(err)
	}
	return owners
}

// exists reports whether a path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
