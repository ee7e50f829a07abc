package kubee2e

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
)

// Deadlines of stage 3's node.
const (
	containerdReadyTimeout = 30 * time.Second
	// kubeletRegisterTimeout bounds how long the kubelet takes to register
	// its Node, and nodeReadyTimeout until the Node is Ready.
	kubeletRegisterTimeout = 60 * time.Second
	kubeNodeReadyTimeout   = 90 * time.Second
)

// stage3Env is what stage 3 prepares the first time it runs: containerd
// on nrinet (hack/containerd.sh, NRINET_CONTAINERD_NRI=compat) and the
// pause and busybox image archives.
type stage3Env struct {
	once sync.Once
	err  error
	// containerdBin holds containerd, containerd-shim-runc-v2 and ctr.
	containerdBin string
	// pauseTar and busyboxTar are the image archives.
	pauseTar, busyboxTar string
}

var stage3 stage3Env

// prepareStage3 runs hack/containerd.sh and writes the images, once.
func prepareStage3(t testing.TB) {
	t.Helper()
	stage3.once.Do(func() {
		stage3.err = func() error {
			if _, err := exec.LookPath("runc"); err != nil {
				return fmt.Errorf("runc not found: stage 3 needs it (Debian package runc)")
			}
			busybox, err := testutil.StaticBusybox()
			if err != nil {
				return err
			}
			cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "containerd.sh"))
			cmd.Env = append(os.Environ(), "NRINET_CONTAINERD_NRI=compat")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("hack/containerd.sh (NRINET_CONTAINERD_NRI=compat): %v\n%s", err, stderr.String())
			}
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "NRINET_CONTAINERD_BIN="); ok {
					stage3.containerdBin = v
				}
			}
			if stage3.containerdBin == "" {
				return fmt.Errorf("hack/containerd.sh printed no NRINET_CONTAINERD_BIN: %q", stdout.String())
			}
			if err := testutil.GoBuild(".", env.dir, []string{"CGO_ENABLED=0"}, "./cmd/pause"); err != nil {
				return err
			}
			stage3.pauseTar, stage3.busyboxTar = filepath.Join(env.dir, "pause.tar"), filepath.Join(env.dir, "busybox.tar")
			if err := writePauseImage(stage3.pauseTar, filepath.Join(env.dir, "pause")); err != nil {
				return fmt.Errorf("pause image: %w", err)
			}
			return writeBusyboxImage(stage3.busyboxTar, busybox)
		}()
	})
	if stage3.err != nil {
		t.Fatal(stage3.err)
	}
}

// kernelTunables are the host-wide sysctls the kubelet sets at start
// (unless protectKernelDefaults, with which it refuses to start when they
// differ). They are not per network namespace, so the node saves them
// before the kubelet starts and puts them back when it ends.
var kernelTunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// A kubeNode is a real node: a network namespace on the underlay running
// containerd and a kubelet registering the Node, everything under dir; the
// pods' cgroups under the node's cgroup root /nrke-<token>-<suffix> of
// every hierarchy. Stage 3's runs containerd on nrinet in network mode nri
// with nri-podnet as the DaemonSet of deploy/ (deployPodnet); the options
// choose others (kubeNodeOptions).
type kubeNode struct {
	t  testing.TB
	cp *controlPlane
	*host
	name, dir string

	sock, nriSock, crictlConfig string
	// cri runs crictl against the node's containerd.
	cri *testutil.Crictl
	// podnetState is the node's directory of the DaemonSet's state
	// hostPath, overlay the test's kustomize overlay (podnetOverlay) once
	// deployPodnet applied it.
	podnetState, overlay string
	cgroupRoot           string
	podCIDRs             []netip.Prefix

	// containerd is the node's runtime: containerd, or CRI-O on a CRI-O
	// node (opts.crio).
	containerd, kubelet, proxy *proc
	// procs are every process the node started, restarted ones too, for
	// the logs of a failed test.
	procs []*proc
	// kubeletRoot is the kubelet's --root-dir, kubeletStarted when it
	// first started.
	kubeletRoot    string
	kubeletStarted time.Time
	// runContainerd and runKubelet start the process (again, for a
	// restart) with the configuration written at the node's start;
	// runContainerd (which starts CRI-O on a CRI-O node) also waits until
	// CRI answers.
	runContainerd, runKubelet func()
	// opts choose the runtime (kubeNodeOptions; the zero value is stage
	// 3's), containerdBin its binaries, metricsAddr where containerd
	// serves its metrics (opts.metrics).
	opts          kubeNodeOptions
	containerdBin string
	metricsAddr   string
	// sandboxNetns are the network namespaces of the sandboxes removePods
	// removed, which must be gone once containerd stopped.
	sandboxNetns []string
}

// kubeNodeOptions choose a kubeNode's runtime. The zero value is stage 3's
// node: containerd on nrinet in network mode nri with nri-podnet.
type kubeNodeOptions struct {
	// cni runs stock containerd (hack/containerd.sh upstream) in its CNI
	// mode with a bridge conflist on the Node's pod CIDRs, and no
	// nri-podnet (bench_test.go).
	cni bool
	// cniServices adds to the conflist what Services and hostPorts need:
	// hairpin mode on the bridge's ports (a pod reaching itself through a
	// Service) and the portmap plugin with its nftables backend.
	cniServices bool
	// metrics serves containerd's Prometheus metrics on the node's
	// underlay address (metricsAddr).
	metrics bool
	// hostLocked says the caller holds the kubelet host lock for this node
	// (lockKubeletHost): a cluster of several nodes takes it once.
	hostLocked bool
	// kubeProxy runs kube-proxy in nftables mode in the node's namespace
	// (kubeproxy_test.go).
	kubeProxy bool
	// clusterDNS is the kubelet's clusterDNS (the kube-dns Service's
	// addresses); none by default.
	clusterDNS []netip.Addr
	// maxPods is the kubelet's maxPods; 0 means 30.
	maxPods int
	// images are more image archives to import into containerd.
	images []imageArchive
	// crio runs CRI-O on nrinet (hack/crio.sh, NRINET_CRIO_NRI=compat) in
	// network mode nri with podnet required, instead of containerd
	// (crionode_test.go): the images are pulled from the suite's registry
	// (CRI has no import), the rest of the node is as containerd's.
	crio bool
	// dropIns makes containerd's configuration import <dir>/conf.d/*.toml,
	// as docs/install.md's config.toml imports /etc/containerd/conf.d
	// (migration_test.go writes and removes nrinet's drop-in there).
	dropIns bool
}

// An imageArchive is an image archive and the reference it holds.
type imageArchive struct{ path, ref string }

// startKubeNode starts the real node and waits until its Node is Ready:
// containerd (runtime ready, network not yet), the images imported, the
// kubelet (the Node registered and given pod CIDRs), then nri-podnet's
// DaemonSet (its pod Ready, containerd's NetworkReady, so the Node turns
// Ready).
func startKubeNode(t testing.TB, cp *controlPlane, suffix string) *kubeNode {
	t.Helper()
	return startKubeNodeWith(t, cp, suffix, kubeNodeOptions{})
}

// startKubeNodeWith starts a real node as startKubeNode does, with the
// runtime opts choose, and its pod network: the CNI conflist, or
// nri-podnet's DaemonSet.
func startKubeNodeWith(t testing.TB, cp *controlPlane, suffix string, opts kubeNodeOptions) *kubeNode {
	t.Helper()
	n := launchKubeNode(t, cp, suffix, opts)
	if opts.cni {
		n.writeCNIConfig()
		n.waitReady()
	} else {
		deployPodnet(t, n)
	}
	t.Logf("Node %s Ready %v after the kubelet started", n.name, time.Since(n.kubeletStarted).Round(time.Millisecond))
	return n
}

// launchKubeNode starts a real node up to its kubelet: the namespace,
// containerd (runtime ready, network not yet) with the images imported,
// the kubelet (the Node registered and given pod CIDRs) and, with
// opts.kubeProxy, kube-proxy. The pod network is the caller's to start.
// One kubelet runs on the host at a time unless the caller holds the host
// lock (opts.hostLocked, lockKubeletHost).
func launchKubeNode(t testing.TB, cp *controlPlane, suffix string, opts kubeNodeOptions) *kubeNode {
	t.Helper()
	prepareStage3(t)
	n := &kubeNode{t: t, cp: cp, name: "nrke-" + cp.token + "-" + suffix,
		cgroupRoot: "/nrke-" + cp.token + "-" + suffix, opts: opts, containerdBin: stage3.containerdBin}
	if opts.cni {
		n.containerdBin = upstreamContainerdBin(t)
	}
	if !opts.hostLocked {
		lockKubeletHost(t)
	}
	n.host = newHost(t, cp.u, n.name, "nrke"+cp.token+suffix, true)
	env.registry.serveIn(t, n.netnsPath)
	n.dir = cp.path("nodes", suffix)
	n.sock = filepath.Join(n.dir, "c.sock")
	if opts.crio {
		n.sock = filepath.Join(n.dir, "crio.sock")
	}
	// The DaemonSet's hostPaths of the NRI socket's directory and of its
	// state are one directory for every node, each node's the
	// subdirectory named after it (podnetOverlay).
	n.nriSock = filepath.Join(cp.dir, "nri", n.name, "nri.sock")
	n.podnetState = filepath.Join(cp.dir, "podnet-state", n.name)
	cri, err := testutil.NewCrictl(env.crictl, n.sock, n.dir, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cri.Name = n.name
	n.cri, n.crictlConfig = cri, cri.Config
	n.makeCgroupRoot()
	n.saveKernelTunables()
	n.removeKubeletHostDirs()
	// <dir>/kubelet/<Node>: a directory that holds the kubelets' roots
	// only, which the DaemonSet of the multi-network stage mounts at the
	// same path (multinetOverlay).
	n.kubeletRoot = n.cp.path("kubelet", n.name)
	// The kubelet makes its root directory a (shared) mount point of its
	// own, and mounts pods' volumes under it.
	t.Cleanup(func() { unmountUnder(t, n.kubeletRoot) })
	// After containerd stopped: the pods' network namespaces are gone, and
	// so are libcni's results.
	t.Cleanup(n.checkSandboxNetnsGone)
	if opts.cni {
		t.Cleanup(n.checkCNIResultsGone)
	}
	// Registered after the above, so it runs before them; the node's
	// processes have no cleanups of their own (launchProc), so that a
	// restarted one cannot be stopped out of turn.
	t.Cleanup(n.stop)

	start := time.Now()
	images := append([]imageArchive{{stage3.pauseTar, pauseRef}, {stage3.busyboxTar, busyboxRef}}, opts.images...)
	if opts.crio {
		var hosts []string
		for _, img := range images {
			if h := imageHost(img.ref); !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		if err := os.MkdirAll(filepath.Dir(n.nriSock), 0o755); err != nil {
			t.Fatal(err)
		}
		n.startCrio(hosts)
		t.Logf("CRI-O ready in %v", time.Since(start).Round(time.Millisecond))
		for _, img := range images {
			n.pullImage(img.path, img.ref)
		}
		t.Logf("CRI-O pulled %d images in %v", len(images), time.Since(start).Round(time.Millisecond))
	} else {
		n.startContainerd()
		t.Logf("containerd ready in %v", time.Since(start).Round(time.Millisecond))
		for _, img := range images {
			n.importImage(img.path, img.ref)
		}
	}
	n.kubeletStarted = time.Now()
	n.startKubelet()
	n.podCIDRs = cp.podCIDRs(n.name)
	checkPodCIDRs(t, cp.family(), n.name, n.podCIDRs)
	t.Logf("kubelet registered Node %s, pod CIDRs %v, in %v", n.name, n.podCIDRs, time.Since(n.kubeletStarted).Round(time.Millisecond))
	if opts.kubeProxy {
		n.startKubeProxy()
	}
	return n
}

// cgroupMounts lists the mount points of the host's cgroup hierarchies
// (v1 and v2).
func cgroupMounts(t testing.TB) []string {
	t.Helper()
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(mountinfo), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && (g[0] == "cgroup" || g[0] == "cgroup2") {
			out = append(out, f[4])
		}
	}
	return out
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy (the
// kubelet requires it to exist) and, in the cleanup, removes it with
// everything under it, deepest first (a cgroup is removed with rmdir once
// it has no processes).
func (n *kubeNode) makeCgroupRoot() {
	t := n.t
	for _, m := range cgroupMounts(t) {
		dir := filepath.Join(m, n.cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("cgroup root: %v", err)
		}
		t.Cleanup(func() {
			var dirs []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			slices.Reverse(dirs)
			for _, d := range dirs {
				if err := os.Remove(d); err != nil {
					t.Errorf("removing cgroup %s: %v", d, err)
				}
			}
		})
	}
}

// saveKernelTunables reads kernelTunables and, in the cleanup, writes
// back those the kubelet changed.
func (n *kubeNode) saveKernelTunables() {
	t := n.t
	saved := map[string]string{}
	for _, k := range kernelTunables {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			t.Fatal(err)
		}
		saved[k] = strings.TrimSpace(string(b))
	}
	t.Cleanup(func() {
		for _, k := range kernelTunables {
			path := filepath.Join("/proc/sys", k)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				continue
			}
			if now := strings.TrimSpace(string(b)); now != saved[k] {
				t.Logf("kernel tunable %s: the kubelet set %s; restoring %s", k, now, saved[k])
				if err := os.WriteFile(path, []byte(saved[k]), 0o644); err != nil {
					t.Errorf("restoring %s=%s: %v", k, saved[k], err)
				}
			}
		}
	})
}

// startContainerd writes containerd's configuration (version 3, as
// test/containerd-e2e's: everything under dir, the pause image pinned as
// the sandbox image, CRI network mode nri with podnet required, and
// restrict_oom_score_adj: the test may lack CAP_SYS_RESOURCE) and starts
// it in the node's namespace, waiting until CRI reports the runtime ready.
// The pods' network namespaces are containerd's default, /var/run/netns
// (iproute2's directory, a shared mount point), which the DaemonSet of
// deploy/ mounts as it is.
func (n *kubeNode) startContainerd() {
	t := n.t
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	p := func(name string) string { return q(filepath.Join(n.dir, name)) }
	for _, d := range []string{"root", "state", "tmp", "opt", "runc", "s"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if s := filepath.Join(n.dir, "s"); len(s) > 42 {
		t.Fatalf("shim socket directory %s is longer than containerd's limit of 42 characters: set TMPDIR to a shorter path", s)
	}
	conf := fmt.Sprintf(`version = 3
root = %s
state = %s
temp = %s

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
    plugin_config_path = %s
    required_network_plugins = ["podnet"]

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %s

  [plugins.'io.containerd.cri.v1.runtime']
    network_mode = 'nri'
    restrict_oom_score_adj = true
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          Root = %s
`, p("root"), p("state"), p("tmp"), q(n.sock), q(n.sock+".ttrpc"), p("opt"), p("s"),
		q(n.nriSock), p("nri-plugins"), p("nri-conf"), q(pauseRef), p("runc"))
	config := filepath.Join(n.dir, "containerd.toml")
	writeFile(t, config, n.adjustContainerdConfig(conf))
	// The shim is found on PATH; runc too (Debian puts it in /usr/sbin).
	// containerd runs in a UTS namespace of its own whose host name is the
	// Node's, as on a machine of that name: host-network pods (whose
	// containers share the runtime's UTS namespace) see it, and agnhost
	// answers with it where the e2e specs expect the Node's host name.
	n.runContainerd = func() {
		n.containerd = n.launch(n.name+"/containerd",
			[]string{"PATH=" + n.containerdBin + ":" + os.Getenv("PATH") + ":/usr/sbin:/sbin"},
			"unshare", "--uts", "--", "sh", "-c", `printf %s "$0" >/proc/sys/kernel/hostname && exec "$@"`, n.name,
			filepath.Join(n.containerdBin, "containerd"), "--config", config, "--log-level", "info")
		waitFor(t, "containerd's CRI", containerdReadyTimeout, 100*time.Millisecond, func() (bool, string) {
			if !n.containerd.running() {
				t.Fatalf("containerd exited: %v\n%s", n.containerd.cmd.ProcessState, n.containerd.log.tail(40))
			}
			runtime, _, msg := n.criConditions()
			return runtime, msg
		})
	}
	n.runContainerd()
}

// criConditions returns crictl info's RuntimeReady and NetworkReady.
func (n *kubeNode) criConditions() (runtime, network bool, msg string) {
	out, errOut, err := n.crictl("info")
	if err != nil {
		return false, false, errOut
	}
	st, err := testutil.ParseRuntimeStatus([]byte(out))
	if err != nil {
		return false, false, err.Error()
	}
	runtime, _, _, _ = st.Condition("RuntimeReady")
	network, reason, message, found := st.Condition("NetworkReady")
	if found {
		msg = reason + ": " + message
	}
	return runtime, network, msg
}

// crictl runs crictl against the node's containerd.
func (n *kubeNode) crictl(args ...string) (string, string, error) {
	return n.cri.Run(args...)
}

// must runs crictl and fails the test if it fails.
func (n *kubeNode) must(args ...string) string {
	n.t.Helper()
	return n.cri.Must(n.t, args...)
}

// importImage imports an image archive into CRI's namespace (k8s.io).
func (n *kubeNode) importImage(archive, ref string) {
	t := n.t
	out, err := exec.Command(filepath.Join(n.containerdBin, "ctr"), "--address", n.sock, "--namespace", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
	}
	n.must("inspecti", ref)
}

// startKubelet writes the kubelet's credentials (client certificate
// system:node:<name> in system:nodes, a serving certificate for the node's
// addresses) and configuration, and starts it in the node's namespace.
// It posts the Node's status every second (default 10 s), so that the
// Node turns NotReady and Ready again promptly when nri-podnet goes and
// comes back.
// Its ports (10250, 10248) are the namespace's own. failCgroupV1 is off:
// since v1.35 the kubelet refuses to start on a cgroup v1 host by default,
// and this machine's hierarchies are v1 (the setting changes nothing on
// cgroup v2).
func (n *kubeNode) startKubelet() {
	t := n.t
	kubeconfig := n.cp.kubeconfig("kubelet-"+n.name, "system:node:"+n.name, "system:nodes")
	serving, err := n.cp.pki.issue(certSpec{name: "kubelet-serving-" + n.name, cn: n.name, server: true,
		dns: []string{n.name}, ips: []netip.Addr{n.addr4, n.addr6}})
	if err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: %s
staticPodPath: %s
podLogsDir: %s
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: %d
nodeStatusUpdateFrequency: 1s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
`, q(n.cgroupRoot), q("unix://"+n.sock), q(n.cp.path("nodes", n.name+"-manifests")),
		q(n.cp.path("nodes", n.name+"-pod-logs")), q(serving.Cert), q(serving.Key), q(n.cp.pki.CA),
		cmp.Or(n.opts.maxPods, 30))
	if len(n.opts.clusterDNS) > 0 {
		config += "clusterDNS:\n"
		for _, a := range n.opts.clusterDNS {
			config += "- " + q(a.String()) + "\n"
		}
	}
	path := filepath.Join(n.dir, "kubelet.yaml")
	writeFile(t, path, config)
	n.runKubelet = func() {
		n.kubelet = n.launch(n.name+"/kubelet", nil, filepath.Join(env.kubeBin, "kubelet"),
			"--config", path,
			"--kubeconfig", kubeconfig,
			"--root-dir", n.kubeletRoot,
			"--hostname-override", n.name,
			"--node-ip", joinAddrs(n.cp.family().hostAddrs(n.host)),
		)
	}
	n.runKubelet()
	waitFor(t, "the kubelet to register Node "+n.name, kubeletRegisterTimeout, 250*time.Millisecond, func() (bool, string) {
		if !n.kubelet.running() {
			t.Fatalf("kubelet exited: %v\n%s", n.kubelet.cmd.ProcessState, n.kubelet.log.tail(60))
		}
		_, err := n.cp.client.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// restart stops a process of the node (SIGTERM) and starts it again with
// run.
func (n *kubeNode) restart(p *proc, run func()) {
	n.t.Helper()
	if err := p.stop(); err != nil {
		n.t.Error(err)
	}
	run()
}

// waitKubeletUp waits until the kubelet, (re)started at since, has
// renewed its Node's lease (kube-node-lease/<name>): it does so once it
// runs, and a kubelet that exits early (it does when its runtime does not
// answer at start) never does.
func (n *kubeNode) waitKubeletUp(since time.Time) {
	t := n.t
	t.Helper()
	waitFor(t, "the kubelet to renew Node "+n.name+"'s lease", kubeletRegisterTimeout, 100*time.Millisecond, func() (bool, string) {
		if !n.kubelet.running() {
			t.Fatalf("kubelet exited: %v\n%s", n.kubelet.cmd.ProcessState, n.kubelet.log.tail(60))
		}
		l, err := n.cp.client.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.RenewTime == nil {
			return false, "no renew time"
		}
		return l.Spec.RenewTime.After(since), "last renewed " + l.Spec.RenewTime.String()
	})
}

// waitReady waits until containerd reports NetworkReady (podnet
// connected) and the Node's Ready condition is True.
func (n *kubeNode) waitReady() {
	t := n.t
	waitFor(t, "Node "+n.name+" Ready", kubeNodeReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		for _, p := range []*proc{n.containerd, n.kubelet} {
			if p != nil && !p.running() {
				t.Fatalf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, p.log.tail(60))
			}
		}
		if _, network, msg := n.criConditions(); !network {
			return false, "containerd: NetworkReady false: " + msg
		}
		node, err := n.cp.client.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
			}
		}
		return false, "no Ready condition"
	})
}

// launch starts one of the node's processes in its namespace.
func (n *kubeNode) launch(name string, extraEnv []string, bin string, args ...string) *proc {
	n.t.Helper()
	p := launchProc(n.t, name, n.netnsPath, extraEnv, bin, args...)
	n.procs = append(n.procs, p)
	return p
}

// stop tears the node's processes down in order: the kubelet stops (so
// that it restarts nothing), every pod sandbox left is stopped and removed
// through CRI, nri-podnet's last, then containerd stops, and a shim left
// running fails the test (reportShims). A failed test gets the logs of
// every process the node started.
func (n *kubeNode) stop() {
	n.removePods()
	if n.containerd != nil {
		if err := n.containerd.stop(); err != nil {
			n.t.Error(err)
		}
		n.reportShims()
	}
	for _, p := range n.procs {
		p.stopAndReport(n.t)
	}
}

// removePods stops the kubelet, then stops and removes every pod sandbox
// through CRI, as a node drained by hand: nri-podnet's (the DaemonSet's)
// last, so that it tears the others' networks down. It notes each
// sandbox's network namespace (checkSandboxNetnsGone).
func (n *kubeNode) removePods() {
	if n.kubelet != nil {
		if err := n.kubelet.stop(); err != nil {
			n.t.Error(err)
		}
	}
	if n.containerd == nil || !n.containerd.running() {
		return
	}
	out, errOut, err := n.crictl("pods", "-q")
	if err != nil {
		n.t.Errorf("crictl pods on %s: %v\n%s", n.name, err, errOut)
		return
	}
	plugin, errOut, err := n.crictl("pods", "-q", "--namespace", podnetNamespace)
	if err != nil {
		n.t.Errorf("crictl pods on %s: %v\n%s", n.name, err, errOut)
		return
	}
	ids := strings.Fields(out)
	slices.SortStableFunc(ids, func(a, b string) int {
		return cmp.Compare(b2i(strings.Contains(plugin, a)), b2i(strings.Contains(plugin, b)))
	})
	for _, id := range ids {
		if ns := n.sandboxNetnsPath(id); ns != "" {
			n.sandboxNetns = append(n.sandboxNetns, ns)
		}
		if _, errOut, err := n.crictl("rmp", "-f", id); err != nil {
			n.t.Errorf("crictl rmp -f %s on %s: %v\n%s", id, n.name, err, errOut)
		}
	}
}

// sandboxNetnsPath returns the path of a sandbox's network namespace as
// containerd made it (crictl inspectp: the runtime spec's network
// namespace), or "" for a host-network one.
func (n *kubeNode) sandboxNetnsPath(id string) string {
	out, errOut, err := n.crictl("inspectp", "-o", "json", id)
	if err != nil {
		n.t.Errorf("crictl inspectp %s on %s: %v\n%s", id, n.name, err, errOut)
		return ""
	}
	var v struct {
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct {
						Type string `json:"type"`
						Path string `json:"path"`
					} `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		n.t.Errorf("crictl inspectp %s on %s: %v", id, n.name, err)
		return ""
	}
	for _, ns := range v.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			return ns.Path
		}
	}
	return ""
}

// checkSandboxNetnsGone fails the test for a network namespace of a
// sandbox removePods removed that is still mounted once containerd
// stopped, and removes it (by its exact path).
func (n *kubeNode) checkSandboxNetnsGone() {
	for _, p := range n.sandboxNetns {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		n.t.Errorf("left behind: a pod's network namespace %s", p)
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			n.t.Errorf("unmounting %s: %v", p, err)
		}
		if err := os.Remove(p); err != nil {
			n.t.Errorf("removing %s: %v", p, err)
		}
	}
}

// kubeletHostDirs are the host directories the kubelet uses whatever its
// --root-dir: the device plugins' socket directory (its own socket and its
// device manager's checkpoint go there) and the container log links.
var kubeletHostDirs = []string{"/var/lib/kubelet", "/var/lib/kubelet/device-plugins", "/var/log/containers"}

// removeKubeletHostDirs notes which of kubeletHostDirs do not exist yet
// and, in the cleanup (after the kubelet stopped), removes those with what
// the kubelet put in them. Directories that existed are left alone: they
// may be another kubelet's.
func (n *kubeNode) removeKubeletHostDirs() {
	var created []string
	for _, d := range kubeletHostDirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			created = append(created, d)
		}
	}
	n.t.Cleanup(func() {
		for _, d := range slices.Backward(created) {
			if err := os.RemoveAll(d); err != nil {
				n.t.Errorf("removing the kubelet's %s: %v", d, err)
			}
		}
	})
}

// unmountUnder unmounts every mount point at or under dir, deepest (most
// recent) first.
func unmountUnder(t testing.TB, dir string) {
	t.Helper()
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	var points []string
	for _, l := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.Reverse(points)
	for _, p := range points {
		if err := unix.Unmount(p, 0); err != nil {
			t.Errorf("unmounting %s: %v", p, err)
		}
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
