package containerde2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// The runbook: docs/install.md's command blocks that TestRunbook runs, as
// written, each marked in the page by an HTML comment
// "<!-- runbook: NAME -->" on the line before its ```sh fence.
const runbookDoc = "../../docs/install.md"

var runbookNames = []string{"install-files", "config", "plugin-dir", "start", "switch-back-cni", "switch-back-previous"}

// runbookMarker matches a block's marker line.
var runbookMarker = regexp.MustCompile(`^\s*<!-- runbook: ([a-z0-9-]+) -->\s*$`)

// runbookBlocks returns the marked command blocks of the Markdown file at
// path, by name, each the lines between its fences with the list's
// indentation removed.
func runbookBlocks(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blocks := map[string]string{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		m := runbookMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name := m[1]
		if _, dup := blocks[name]; dup {
			return nil, fmt.Errorf("%s:%d: runbook block %q marked twice", path, i+1, name)
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("%s:%d: runbook marker %q is not followed by a ```sh fence", path, i+1, name)
		}
		indent := lines[i+1][:len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " "))]
		var body []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: runbook block %q has no closing fence", path, i+1, name)
		}
		blocks[name] = strings.Join(body, "\n") + "\n"
		i = j
	}
	return blocks, nil
}

// TestRunbookBlocks checks that docs/install.md has every block the
// runbook test runs, and no marked block it does not run.
func TestRunbookBlocks(t *testing.T) {
	blocks, err := runbookBlocks(runbookDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range runbookNames {
		if strings.TrimSpace(blocks[n]) == "" {
			t.Errorf("%s has no runbook block %q", runbookDoc, n)
		}
	}
	for n := range blocks {
		if !slices.Contains(runbookNames, n) {
			t.Errorf("%s marks a runbook block %q that TestRunbook does not run", runbookDoc, n)
		}
	}
}

// runbookNode is the node the runbook installs on: a network namespace,
// and a mount namespace (held by a sleeping process) in which /usr, /etc,
// /opt and /var/lib are overlays of the host's whose changes go to the
// test's directory, /var/lib/containerd a directory of the test's and
// /run a tmpfs: its own root where the runbook writes, the host's
// everywhere else.
type runbookNode struct {
	t      *testing.T
	token  string
	dir    string // the test's files; the uppers of the overlays
	state  string // the systemctl stand-in's state (short: socket paths)
	bin    string // sudo and systemctl, first on the runbook's PATH
	netns  string
	holder *exec.Cmd
	mnt    string // the holder's mount namespace (readlink of /proc/PID/ns/mnt)
	// cgroupParent is the pods' cgroup parent.
	cgroupParent string
}

func newRunbookNode(t *testing.T) *runbookNode {
	t.Helper()
	token := randHex(4)
	n := &runbookNode{t: t, token: token, dir: t.TempDir(), netns: "nrbk-" + token,
		cgroupParent: "/" + cgroupTopPrefix + "rb" + token}
	state, err := os.MkdirTemp("", "nrbk-")
	if err != nil {
		t.Fatal(err)
	}
	n.state = state
	t.Cleanup(func() { os.RemoveAll(state) })
	n.bin = filepath.Join(n.dir, "bin")
	if err := os.MkdirAll(n.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(n.bin, systemctlName)); err != nil {
		t.Fatal(err)
	}
	// The node's root runs the runbook: sudo only runs the command.
	if err := os.WriteFile(filepath.Join(n.bin, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("ip", "netns", "add", n.netns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", n.netns, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.netns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", n.netns, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", n.netns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up in %s: %v\n%s", n.netns, err, out)
	}

	// The holder says "ready" once it is in its new mount namespace: until
	// then /proc/<pid>/ns/mnt is the host's, and mounts made there would
	// land on the host.
	n.holder = exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "echo ready && exec sleep infinity")
	stdout, err := n.holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the mount namespace's holder said %q: %v", line, err)
	}
	host, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if n.mnt, err = os.Readlink("/proc/" + strconv.Itoa(n.holder.Process.Pid) + "/ns/mnt"); err != nil || n.mnt == host {
		t.Fatalf("the holder's mount namespace is %q (%v), the host's %q", n.mnt, err, host)
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, d := range []string{"/usr", "/etc", "/opt", "/var/lib"} {
		up := filepath.Join(n.dir, "root", strings.TrimPrefix(d, "/"))
		fmt.Fprintf(&script, "mkdir -p %[1]s/upper %[1]s/work\nmount -t overlay overlay -o lowerdir=%[2]s,upperdir=%[1]s/upper,workdir=%[1]s/work %[2]s\n", up, d)
	}
	// containerd's overlayfs snapshotter needs a file system that is not
	// overlayfs itself.
	fmt.Fprintf(&script, "mkdir -p %[1]s /var/lib/containerd\nmount --bind %[1]s /var/lib/containerd\n", filepath.Join(n.dir, "containerd-root"))
	script.WriteString("mount -t tmpfs -o mode=0755 tmpfs /run\nmkdir -p /run/netns /run/lock\n")
	n.nsenter(false, "", nil, "sh", "-c", script.String())
	return n
}

// nsenter runs a command in the node's mount namespace (and network
// namespace, with net) in dir, and returns its output; a failure fails
// the test.
func (n *runbookNode) nsenter(net bool, dir string, env []string, args ...string) string {
	n.t.Helper()
	out, err := n.nsenterErr(net, dir, env, args...)
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (n *runbookNode) nsenterErr(net bool, dir string, env []string, args ...string) (string, error) {
	// Never the host's mount namespace: the runbook writes to /usr and
	// /etc.
	nsPath := "/proc/" + strconv.Itoa(n.holder.Process.Pid) + "/ns/mnt"
	if l, err := os.Readlink(nsPath); err != nil || l != n.mnt {
		return "", fmt.Errorf("the node's mount namespace is gone (%s is %q: %v)", nsPath, l, err)
	}
	a := []string{"--mount=" + nsPath}
	if net {
		a = append(a, "--net=/run/netns/"+n.netns)
	}
	if dir != "" {
		a = append(a, "--wd="+dir)
	}
	// Not the test's context: the cleanup runs commands too, after it
	// is canceled.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append(append(a, "--"), args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runbook runs the runbook block name as written, with bash -e -u, in the
// node's namespaces and dir, with the stand-ins first on PATH, and
// returns its output.
func (n *runbookNode) runbook(blocks map[string]string, name, dir string) string {
	n.t.Helper()
	block := blocks[name]
	start := time.Now()
	out, err := n.nsenterErr(true, dir, []string{
		"PATH=" + n.bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		runbookStateEnv + "=" + n.state,
	}, "bash", "-e", "-u", "-c", block)
	if err != nil {
		n.t.Fatalf("runbook block %q (docs/install.md) failed: %v\n--- block:\n%s--- output:\n%s%s", name, err, block, out, n.unitLog("containerd"))
	}
	n.t.Logf("runbook %q in %v:\n%s--- output:\n%s", name, time.Since(start).Round(time.Millisecond), block, out)
	return out
}

// unitLog is the tail of the stand-in's log of unit.
func (n *runbookNode) unitLog(unit string) string {
	p := filepath.Join(n.state, unit+".log")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return "--- " + unit + "'s log:\n" + tail(p, 40)
}

// sock is containerd's default socket, seen from the host through the
// mount namespace's root.
func (n *runbookNode) sock() string {
	return "/proc/" + strconv.Itoa(n.holder.Process.Pid) + "/root/run/containerd/containerd.sock"
}

// crictl runs crictl against the node's containerd.
func (n *runbookNode) crictl(args ...string) (string, error) {
	ep := "unix://" + n.sock()
	cmd := exec.Command(env.crictl, append([]string{"--config", "/dev/null",
		"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "20s"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func (n *runbookNode) mustCrictl(args ...string) string {
	n.t.Helper()
	out, err := n.crictl(args...)
	if err != nil {
		n.t.Fatalf("crictl %s: %v\n%s%s", strings.Join(args, " "), err, out, n.unitLog("containerd"))
	}
	return out
}

// waitCRI waits until containerd's CRI answers with RuntimeReady and
// NetworkReady as wanted, and returns the network condition's message.
func (n *runbookNode) waitCRI(network bool) string {
	n.t.Helper()
	var msg string
	err := testutil.Poll(readyTimeout, 100*time.Millisecond, func() error {
		out, err := n.crictl("info")
		if err != nil {
			return fmt.Errorf("containerd's CRI not RuntimeReady with NetworkReady %v: %s", network, out)
		}
		i, perr := parseInfo(out)
		if perr != nil || !i.runtimeReady || i.networkReady != network {
			return fmt.Errorf("containerd's CRI not RuntimeReady with NetworkReady %v: %+v %v", network, i, perr)
		}
		msg = i.networkMessage
		return nil
	})
	if err != nil {
		n.t.Fatalf("%v%s", err, n.unitLog("containerd"))
	}
	return msg
}

// runPod runs a pod sandbox with a busybox container that sleeps and
// returns the sandbox and container IDs.
func (n *runbookNode) runPod(name string) (sandbox, ctr string) {
	n.t.Helper()
	podFile := n.writeJSON("pod-"+name+".json", map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "nrinet-runbook", "uid": name + "-" + n.token, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(n.dir, "logs", name),
		"linux":         map[string]any{"cgroup_parent": n.cgroupParent},
	})
	ctrFile := n.writeJSON("ctr-"+name+".json", map[string]any{
		"metadata": map[string]any{"name": "sleeper"},
		"image":    map[string]any{"image": busyboxRef},
		"command":  []string{"sleep", "3600"},
		"log_path": "sleeper.log",
		"linux":    map[string]any{},
	})
	sandbox = strings.TrimSpace(n.mustCrictl("runp", podFile))
	ctr = strings.TrimSpace(n.mustCrictl("create", sandbox, ctrFile, podFile))
	n.mustCrictl("start", ctr)
	return sandbox, ctr
}

func (n *runbookNode) writeJSON(name string, v any) string {
	n.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		n.t.Fatal(err)
	}
	p := filepath.Join(n.dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		n.t.Fatal(err)
	}
	return p
}

// podIPs returns the pod's addresses, as crictl inspectp reports them.
func (n *runbookNode) podIPs(sandbox string) []netip.Addr {
	n.t.Helper()
	out := n.mustCrictl("inspectp", sandbox)
	v, err := testutil.ParsePodStatus([]byte(out))
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", sandbox, err, out)
	}
	var ips []netip.Addr
	for _, s := range v.IPs() {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			n.t.Fatalf("pod %s: address %q: %v", sandbox, s, err)
		}
		ips = append(ips, ip)
	}
	return ips
}

// ping pings each of ips from the container ctr.
func (n *runbookNode) ping(ctr string, ips []netip.Addr) {
	n.t.Helper()
	for _, ip := range ips {
		if out, err := n.crictl("exec", "--sync", "--timeout", "10", ctr, "ping", "-c", "1", "-W", "2", ip.String()); err != nil {
			n.t.Errorf("ping %s from %s: %v\n%s", ip, ctr, err, out)
		}
	}
}

// stop removes every pod through CRI, stops containerd through the
// stand-in, checks that no process is left in the node's mount namespace,
// and ends it; then removes the pods' cgroups.
func (n *runbookNode) stop() {
	t := n.t
	if out, err := n.crictl("rmp", "-fa"); err != nil {
		t.Logf("crictl rmp -fa: %v\n%s", err, out)
	}
	if out, err := n.nsenterErr(true, "", []string{runbookStateEnv + "=" + n.state}, filepath.Join(n.bin, systemctlName), "stop", "containerd"); err != nil {
		t.Errorf("systemctl stop containerd: %v\n%s", err, out)
	}
	mnt := n.mnt
	var left []string
	// What is still there after stopTimeout is reported below.
	testutil.Poll(stopTimeout, 50*time.Millisecond, func() error {
		left = left[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == n.holder.Process.Pid || exited(pid) {
				continue
			}
			if l, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && l == mnt {
				comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
				left = append(left, e.Name()+" "+strings.TrimSpace(string(comm)))
			}
		}
		if len(left) > 0 {
			return errors.New("processes left")
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("processes left in the node's mount namespace after containerd stopped: %q%s", left, n.unitLog("containerd"))
		for _, l := range left {
			pid, _ := strconv.Atoi(strings.Fields(l)[0])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	n.holder.Process.Kill()
	n.holder.Wait()
	for _, h := range cgroupHierarchies() {
		p := filepath.Join(h, n.cgroupParent)
		if _, err := os.Stat(p); err == nil {
			if err := removeCgroupTree(p); err != nil {
				t.Errorf("pods' cgroup %s: %v", p, err)
			}
		}
	}
}

// TestRunbook installs containerd on nrinet and nri-podnet on a node from
// the release tarballs with docs/install.md's commands, as written
// (runbook blocks, above), and checks that the node runs pods with
// nri-podnet; then takes the page's two ways back. The node starts with
// a distribution's containerd (stock containerd v2.4.2 in /usr/bin and a
// unit in /usr/lib/systemd/system, as a package installs them), which the
// last way back must bring back. docs/install.md, "Install on one node".
func TestRunbook(t *testing.T) {
	skipUnlessEnabled(t)
	blocks, err := runbookBlocks(runbookDoc)
	if err != nil {
		t.Fatal(err)
	}
	// The release tarballs for this machine's architecture, as make
	// release writes them, into the "download" directory.
	download := t.TempDir()
	start := time.Now()
	release := exec.CommandContext(t.Context(), cmp.Or(os.Getenv("GO"), "go"), "run", "./hack/release",
		"-version", "v0.0.0-runbook."+randHex(2), "-arch", runtime.GOARCH, "-out", download,
		"-make", cmp.Or(os.Getenv("MAKE"), "make"), "-cache", releaseCache())
	release.Dir = filepath.Join("..", "..")
	release.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	if out, err := release.CombinedOutput(); err != nil {
		t.Fatalf("hack/release: %v\n%s", err, out)
	}
	t.Logf("release tarballs for linux/%s in %v", runtime.GOARCH, time.Since(start).Round(time.Second))
	stock := env.builds.get(t.Context(), t, "upstream")

	n := newRunbookNode(t)
	// The node's previous containerd, as Debian's package installs it.
	n.nsenter(false, "", nil, "sh", "-ec", fmt.Sprintf(`
install -m 0755 %[1]s/containerd %[1]s/containerd-shim-runc-v2 %[1]s/ctr /usr/bin/
mkdir -p /usr/lib/systemd/system
cat >/usr/lib/systemd/system/containerd.service <<'EOF'
[Unit]
Description=containerd container runtime (the distribution's)
[Service]
ExecStart=/usr/bin/containerd
Type=notify
Delegate=yes
KillMode=process
[Install]
WantedBy=multi-user.target
EOF
`, stock.bin))

	n.runbook(blocks, "install-files", download)
	n.runbook(blocks, "config", download)
	n.runbook(blocks, "plugin-dir", download)
	// This machine's own setting, in a drop-in of its own as
	// docs/install.md tells for local changes: its root lacks
	// CAP_SYS_RESOURCE, so a container may not lower its oom_score_adj
	// (runc's init would fail); a real node needs no such file.
	n.nsenter(false, "", nil, "sh", "-ec", `cat >/etc/containerd/conf.d/50-this-machine.toml <<'EOF'
version = 3
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
EOF
`)
	out := n.runbook(blocks, "start", download)
	if !strings.Contains(out, "/usr/local/lib/systemd/system/containerd.service") || !strings.Contains(out, "+nrinet.") {
		t.Errorf("after the start block: want systemctl cat to show /usr/local/lib/systemd/system/containerd.service and containerd --version containerd on nrinet; got:\n%s", out)
	}

	// The images the pods run (a node pulls them; this one has no
	// registry): the pause image under the sandbox image name containerd
	// is configured with, and busybox.
	dump := n.nsenter(true, "", nil, "/usr/local/bin/containerd", "config", "dump")
	m := regexp.MustCompile(`(?m)^\s*sandbox = '([^']+)'`).FindStringSubmatch(dump)
	if m == nil {
		t.Fatalf("containerd config dump names no sandbox image:\n%s", dump)
	}
	pauseTar := filepath.Join(n.dir, "pause.tar")
	if err := writePauseImage(pauseTar, m[1], filepath.Join(env.dir, "pause")); err != nil {
		t.Fatal(err)
	}
	for _, archive := range []string{pauseTar, env.busyboxTar} {
		n.nsenter(true, "", nil, "/usr/local/bin/ctr", "-n", "k8s.io", "images", "import", archive)
	}

	// nri-podnet, launched by containerd from its plugin directory, makes
	// the network ready; two pods get addresses of 10-podnet.conf's
	// subnets and reach each other.
	msg := n.waitCRI(true)
	t.Logf("containerd on nrinet: NetworkReady (%s)", msg)
	subnets := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("fd00:198:18::/64")}
	a, actr := n.runPod("a")
	b, bctr := n.runPod("b")
	aIPs, bIPs := n.podIPs(a), n.podIPs(b)
	for _, ips := range [][]netip.Addr{aIPs, bIPs} {
		if len(ips) != 2 || !subnets[0].Contains(ips[0]) || !subnets[1].Contains(ips[1]) {
			t.Fatalf("pod addresses %v, want one of each of %v (10-podnet.conf)", ips, subnets)
		}
	}
	n.ping(actr, bIPs)
	n.ping(bctr, aIPs)
	t.Logf("pods a %v and b %v ping each other", aIPs, bIPs)

	// The way back to CNI with containerd on nrinet: the pods of mode nri
	// keep their addresses and traffic, and their removal reaches
	// nri-podnet, which takes their interfaces down.
	n.runbook(blocks, "switch-back-cni", download)
	msg = n.waitCRI(false)
	t.Logf("containerd on nrinet in network mode cni: NetworkReady false (%s): no CNI configuration on this node", msg)
	if got := n.podIPs(a); !slices.Equal(got, aIPs) {
		t.Errorf("pod a's addresses after the switch back: %v, want %v", got, aIPs)
	}
	n.ping(actr, bIPs)
	for _, p := range []string{a, b} {
		n.mustCrictl("stopp", p)
		n.mustCrictl("rmp", p)
	}
	if out, err := exec.Command("ip", "-n", n.netns, "-o", "link", "show", "master", "nrinet0").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("ports left on nri-podnet's bridge after the pods were removed: %v\n%s", err, out)
	}

	// The way back to the node's previous containerd.
	out = n.runbook(blocks, "switch-back-previous", download)
	cat := n.nsenter(true, "", []string{runbookStateEnv + "=" + n.state}, filepath.Join(n.bin, systemctlName), "cat", "containerd")
	version := n.nsenter(true, "", []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, "containerd", "--version")
	if !strings.Contains(cat, "# /usr/lib/systemd/system/containerd.service") || strings.Contains(version, "nrinet") {
		t.Errorf("after switching back to the previous containerd: unit\n%s\nversion %s; want the distribution's unit and stock containerd", cat, version)
	}
	n.waitCRI(false)
	t.Logf("the distribution's containerd runs again: %s", strings.TrimSpace(version))
	for _, f := range []string{"/usr/local/bin/containerd", "/usr/local/bin/ctr", "/usr/local/lib/systemd/system/containerd.service", "/etc/containerd/conf.d/nrinet-network-mode.toml"} {
		if out, err := n.nsenterErr(false, "", nil, "test", "!", "-e", f); err != nil {
			t.Errorf("%s still there after the way back: %v %s", f, err, out)
		}
	}
}

// releaseCache is where make release keeps its containerd builds
// (the Makefile's RELEASE_CACHE).
func releaseCache() string {
	if c := os.Getenv("RELEASE_CACHE"); c != "" {
		return c
	}
	return filepath.Join(cmp.Or(os.Getenv("NRINET_CONTAINERD_CACHE"), "/var/cache/nrinet"), "release")
}

// removeCgroupTree removes the cgroup directory p and those below it,
// innermost first; a cgroup whose last process just exited may be busy
// for a moment.
func removeCgroupTree(p string) error {
	var dirs []string
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := waitFor("rmdir "+d, func() (bool, error) {
			err := syscall.Rmdir(d)
			switch {
			case err == nil, errors.Is(err, syscall.ENOENT):
				return true, nil
			case errors.Is(err, syscall.EBUSY):
				return false, nil
			}
			return false, err
		}); err != nil {
			return err
		}
	}
	return nil
}
