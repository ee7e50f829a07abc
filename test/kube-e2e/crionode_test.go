package kubee2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nrinet/nrinet/internal/testutil"
)

// crioReadyTimeout bounds how long CRI-O takes to answer CRI with its
// runtime ready.
const crioReadyTimeout = 60 * time.Second

// crioNodeEnv is what a CRI-O node needs once per run: CRI-O on nrinet
// (hack/crio.sh, NRINET_CRIO_NRI=compat), conmon and runc found, and the
// image archives the nodes use pushed to the suite's registry (mirrorImage).
type crioNodeEnv struct {
	once sync.Once
	err  error
	// bin holds crio and pinns; conmon is Debian's conmon.
	bin, conmon string

	mu sync.Mutex // guards pushed
	// pushed are the archives mirrorImage pushed, by path.
	pushed map[string]bool
}

var crioNode crioNodeEnv

// mirrorRepo is the repository of the suite's registry under which
// mirrorImage pushes an image of reference host/path:tag, as
// <mirrorRepo>/host/path:tag; a CRI-O node's registries.conf sends every
// pull of host/... there.
const mirrorRepo = "mirror"

// prepareCrioNode runs hack/crio.sh (CRI-O on nrinet) and finds conmon
// and runc, once.
func prepareCrioNode(t testing.TB) {
	t.Helper()
	crioNode.once.Do(func() {
		crioNode.err = func() error {
			for tool, pkg := range map[string]string{"conmon": "conmon", "runc": "runc"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					return fmt.Errorf("%s not found: a CRI-O node needs it (Debian package %s)", tool, pkg)
				}
				if tool == "conmon" {
					crioNode.conmon = p
				}
			}
			cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "crio.sh"))
			cmd.Env = append(os.Environ(), "NRINET_CRIO_NRI=compat")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("hack/crio.sh (NRINET_CRIO_NRI=compat): %v\n%s", err, stderr.String())
			}
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "NRINET_CRIO_BIN="); ok {
					crioNode.bin = v
				}
			}
			if crioNode.bin == "" {
				return fmt.Errorf("hack/crio.sh printed no NRINET_CRIO_BIN: %q", stdout.String())
			}
			crioNode.pushed = map[string]bool{}
			return nil
		}()
	})
	if crioNode.err != nil {
		t.Fatal(crioNode.err)
	}
}

// mirrorImage pushes the image archive (one image, tagged ref) to the
// suite's registry as <registry>/mirror/<ref>, once per archive.
func mirrorImage(t testing.TB, archive, ref string) {
	t.Helper()
	crioNode.mu.Lock()
	defer crioNode.mu.Unlock()
	if crioNode.pushed[archive] {
		return
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatalf("image archive %s: %v", archive, err)
	}
	dst := "127.0.0.1:" + fmt.Sprint(env.registry.port) + "/" + mirrorRepo + "/" + ref
	tag, err := name.NewTag(dst, name.StrictValidation)
	if err == nil {
		err = remote.Write(tag, img, remote.WithContext(t.Context()))
	}
	if err != nil {
		t.Fatalf("pushing %s as %s: %v", archive, dst, err)
	}
	crioNode.pushed[archive] = true
}

// crioRegistries is a CRI-O node's registries.conf: the suite's registry
// (plain HTTP) for nri-podnet's image, and a prefix rule per registry
// host of the images the node pulls, which sends host/... to
// <registry>/mirror/host/... (mirrorImage).
func crioRegistries(hosts []string) string {
	reg := "127.0.0.1:" + fmt.Sprint(env.registry.port)
	s := fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", reg)
	for _, h := range hosts {
		s += fmt.Sprintf("\n[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", h, reg+"/"+mirrorRepo+"/"+h)
	}
	return s
}

// imageHost is the registry host of an image reference: the part before
// the first slash.
func imageHost(ref string) string {
	h, _, _ := strings.Cut(ref, "/")
	return h
}

// crioNamespaceDirs are the directories CRI-O's pinns makes under
// namespaces_dir (/var/run, CRI-O's default, so that the pods' network
// namespaces are in /var/run/netns, which nri-podnet's DaemonSet mounts).
var crioNamespaceDirs = []string{"/var/run/netns", "/var/run/ipcns", "/var/run/utsns", "/var/run/userns"}

// startCrio writes CRI-O's configuration (crioConfig) and starts CRI-O on
// nrinet in the node's namespace, in a UTS namespace of its own named
// after the Node as containerd is (startContainerd), waiting until CRI
// reports the runtime ready. Its runtime is runc behind
// testutil.RuncWrapperName (this test binary: the test may lack
// CAP_SYS_RESOURCE, which CRI-O's infra containers' oom_score_adj needs).
func (n *kubeNode) startCrio(hosts []string) {
	t := n.t
	prepareCrioNode(t)
	for _, d := range []string{"root", "run", "logs", "exits", "attach", "hooks", "keys", "policies",
		"nri-plugins", "nri-conf", "cni", "crio.conf.d", "registries.d"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// pinns makes namespaces_dir's subdirectories it lacks; those it made
	// go when the node ends (empty: a pinned namespace left is an error).
	var made []string
	for _, d := range crioNamespaceDirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			made = append(made, d)
		}
	}
	t.Cleanup(func() {
		for _, d := range made {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				t.Errorf("removing CRI-O's %s: %v", d, err)
			}
		}
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(n.dir, testutil.RuncWrapperName)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(n.dir, "policy.json"), `{"default": [{"type": "insecureAcceptAnything"}]}`)
	registries := filepath.Join(n.dir, "registries.conf")
	writeFile(t, registries, crioRegistries(hosts))
	config := filepath.Join(n.dir, "crio.conf")
	writeFile(t, config, n.crioConfig())
	writeFile(t, filepath.Join(n.dir, "crio.conf.d", "10-nri-network.conf"), crioNetworkDropIn)
	// CRI-O's storage (overlay) mounts under root and run; whatever a
	// failed test leaves there is unmounted, before the directory goes.
	t.Cleanup(func() { unmountUnder(t, n.dir) })
	n.runContainerd = func() {
		n.containerd = n.launch(n.name+"/crio",
			[]string{"PATH=" + os.Getenv("PATH") + ":/usr/sbin:/sbin"},
			"unshare", "--uts", "--", "sh", "-c", `printf %s "$0" >/proc/sys/kernel/hostname && exec "$@"`, n.name,
			filepath.Join(crioNode.bin, "crio"), "--config", config, "--config-dir", filepath.Join(n.dir, "crio.conf.d"),
			"--registries-conf", registries, "--registries-conf-dir", filepath.Join(n.dir, "registries.d"),
			"--log-level", "info")
		waitFor(t, "CRI-O's CRI", crioReadyTimeout, 100*time.Millisecond, func() (bool, string) {
			if !n.containerd.running() {
				t.Fatalf("crio exited: %v\n%s", n.containerd.cmd.ProcessState, n.containerd.log.tail(40))
			}
			runtime, _, msg := n.criConditions()
			return runtime, msg
		})
	}
	n.runContainerd()
}

// crioNetworkDropIn is the drop-in crio.conf.d/10-nri-network.conf of a
// CRI-O node, as docs/crio.md's configuration: network mode nri with
// nri-podnet required.
const crioNetworkDropIn = `[crio.network]
network_mode = "nri"
required_network_plugins = ["podnet"]
`

// crioConfig is a CRI-O node's crio.conf: every path CRI-O writes under
// the node's directory except namespaces_dir (CRI-O's default, /var/run:
// crioNamespaceDirs), overlay storage, the cgroupfs manager as the
// kubelet's cgroupDriver, conmon in the pod's cgroup, runc behind
// testutil.RuncWrapperName, the pause image pinned, NRI on the node's
// socket (the DaemonSet's hostPath, podnetOverlay), the stream server on
// 127.0.0.1 as containerd's, and irqbalance's restore off (it would write
// /etc/sysconfig).
func (n *kubeNode) crioConfig() string {
	p := func(name string) string { b, _ := json.Marshal(filepath.Join(n.dir, name)); return string(b) }
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`[crio]
root = %s
runroot = %s
storage_driver = "overlay"
log_dir = %s
version_file = %s
version_file_persist = %s
clean_shutdown_file = %s

[crio.api]
listen = %s
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
conmon = %s
container_exits_dir = %s
container_attach_socket_dir = %s
pinns_path = %s
hooks_dir = [%s]
decryption_keys_path = %s
irqbalance_config_file = %s
irqbalance_config_restore_file = "disable"

[crio.runtime.runtimes.runc]
runtime_path = %s
runtime_root = %s
monitor_path = %s

[crio.image]
signature_policy = %s
signature_policy_dir = %s
pause_image = %s

[crio.network]
network_dir = %s
plugin_dirs = [%s]

[crio.nri]
enable_nri = true
nri_listen = %s
nri_plugin_dir = %s
nri_plugin_config_dir = %s
`, p("root"), p("run"), p("logs"), p(filepath.Join("run", "version")), p("version"), p("clean.shutdown"),
		q(n.sock), q(crioNode.conmon), p("exits"), p("attach"), q(filepath.Join(crioNode.bin, "pinns")), p("hooks"),
		p("keys"), p("irqbalance"), p(testutil.RuncWrapperName), p("runc"), q(crioNode.conmon),
		p("policy.json"), p("policies"), q(pauseRef), p("cni"), p("cni-bin"), q(n.nriSock), p("nri-plugins"), p("nri-conf"))
}

// pullImage makes a CRI-O node hold the image of archive: pushed to the
// suite's registry (mirrorImage), then pulled through CRI (crictl pull),
// which the node's registries.conf sends to the mirror.
func (n *kubeNode) pullImage(archive, ref string) {
	n.t.Helper()
	mirrorImage(n.t, archive, ref)
	n.must("pull", ref)
}
