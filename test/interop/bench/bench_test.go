package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// TestMain turns the benchmark binary into a plugin process when
// BENCH_PLUGIN_SOCKET is set.
func TestMain(m *testing.M) {
	if sock := os.Getenv("BENCH_JOINER_SOCKET"); sock != "" {
		joinerProcess(sock)
		return
	}
	if sock := os.Getenv("BENCH_PLUGIN_SOCKET"); sock != "" {
		pluginProcess(sock, os.Getenv("BENCH_PLUGIN_IDX"), os.Getenv("BENCH_PLUGIN_MODE"))
		return
	}
	os.Exit(m.Run())
}

// plugin is the benchmark plugin: it counts pod events and adjusts
// containers with one env var, one annotation, one mount and one resource
// setting of its own, so that the three plugins of the CreateContainer
// benchmark exercise the merge of each kind without conflicting.
type plugin struct {
	name   string
	synced chan struct{}
	pods   int
}

func (p *plugin) Synchronize(context.Context, []*PodSandbox, []*Container) ([]*ContainerUpdate, error) {
	select {
	case p.synced <- struct{}{}:
	default:
	}
	return nil, nil
}

func (p *plugin) RunPodSandbox(context.Context, *PodSandbox) error {
	p.pods++
	return nil
}

// slowPlugin works 2 ms on each pod, as a plugin setting up a network
// might (sleeping, so that the CPU stays free for the runtime).
type slowPlugin struct{ runPodOnly }

func (s slowPlugin) RunPodSandbox(ctx context.Context, pod *PodSandbox) error {
	time.Sleep(2 * time.Millisecond)
	return nil
}

// The resource settings of the plugins of CreateContainer, by name.
const (
	benchMemLimit  = 512 << 20 // p10
	benchCPUShares = 512       // p11
	benchCPUs      = "2-3"     // p12 (and any other)
)

func (p *plugin) CreateContainer(context.Context, *PodSandbox, *Container) (*ContainerAdjustment, []*ContainerUpdate, error) {
	res := &LinuxResources{}
	switch p.name {
	case "p10":
		res.Memory = &LinuxMemory{Limit: &OptionalInt64{Value: benchMemLimit}}
	case "p11":
		res.Cpu = &LinuxCPU{Shares: &OptionalUInt64{Value: benchCPUShares}}
	default:
		res.Cpu = &LinuxCPU{Cpus: benchCPUs}
	}
	return &ContainerAdjustment{
		Annotations: map[string]string{"bench.nrinet.io/" + p.name: "yes"},
		Env:         []*KeyValue{{Key: "BENCH_" + p.name, Value: "1"}},
		Mounts: []*Mount{{
			Destination: "/var/lib/bench/" + p.name, Type: "bind", Source: "/var/lib/bench-host/" + p.name,
			Options: []string{"rbind", "rprivate", "rw"},
		}},
		Linux: &LinuxContainerAdjustment{Resources: res},
	}, nil, nil
}

// checkMerged checks that the merged adjustment of the CreateContainer
// benchmark has every plugin's env var, annotation, mount and resource
// setting.
func checkMerged(adj *ContainerAdjustment) error {
	for _, name := range []string{"p10", "p11", "p12"} {
		if adj.GetAnnotations()["bench.nrinet.io/"+name] != "yes" {
			return fmt.Errorf("no annotation of %s in %v", name, adj)
		}
		if !slices.ContainsFunc(adj.GetEnv(), func(kv *KeyValue) bool { return kv.GetKey() == "BENCH_"+name && kv.GetValue() == "1" }) {
			return fmt.Errorf("no env var of %s in %v", name, adj)
		}
		if !slices.ContainsFunc(adj.GetMounts(), func(m *Mount) bool {
			return m.GetDestination() == "/var/lib/bench/"+name && m.GetSource() == "/var/lib/bench-host/"+name
		}) {
			return fmt.Errorf("no mount of %s in %v", name, adj)
		}
	}
	if n, m, k := len(adj.GetEnv()), len(adj.GetAnnotations()), len(adj.GetMounts()); n != 3 || m != 3 || k != 3 {
		return fmt.Errorf("merged adjustment has %d env vars, %d annotations and %d mounts, want 3 each", n, m, k)
	}
	res := adj.GetLinux().GetResources()
	if res.GetMemory().GetLimit().GetValue() != benchMemLimit || res.GetCpu().GetShares().GetValue() != benchCPUShares || res.GetCpu().GetCpus() != benchCPUs {
		return fmt.Errorf("merged resources %v, want memory limit %d, CPU shares %d, cpus %q", res, benchMemLimit, benchCPUShares, benchCPUs)
	}
	return nil
}

// createOnly hides RunPodSandbox, so the plugin subscribes to
// CreateContainer only, as a resource plugin might.
type createOnly struct{ p *plugin }

func (c createOnly) Synchronize(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
	return c.p.Synchronize(ctx, pods, ctrs)
}

func (c createOnly) CreateContainer(ctx context.Context, pod *PodSandbox, ctr *Container) (*ContainerAdjustment, []*ContainerUpdate, error) {
	return c.p.CreateContainer(ctx, pod, ctr)
}

// runPodOnly hides CreateContainer, so the plugin subscribes to pod events.
type runPodOnly struct{ p *plugin }

func (r runPodOnly) Synchronize(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
	return r.p.Synchronize(ctx, pods, ctrs)
}

func (r runPodOnly) RunPodSandbox(ctx context.Context, pod *PodSandbox) error {
	return r.p.RunPodSandbox(ctx, pod)
}

func handlerFor(p *plugin, mode string) any {
	switch mode {
	case "create":
		return p
	case "status":
		return statusHandler(p)
	case "slow":
		return slowPlugin{runPodOnly{p}}
	case "containers":
		return createOnly{p}
	}
	return runPodOnly{p}
}

// pluginProcess runs one plugin until the runtime goes away; it writes a
// line to stdout when synchronized.
func pluginProcess(sock, idx, mode string) {
	p := &plugin{name: "p" + idx, synced: make(chan struct{}, 1)}
	go func() {
		<-p.synced
		fmt.Println("synced")
	}()
	if err := runPlugin(context.Background(), handlerFor(p, mode), sock, idx); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// testPod is a pod like the kubelet's: 5 labels, 5 annotations, 2 IPs.
func testPod() *PodSandbox {
	return &PodSandbox{
		Id:             "6b1a0fd8c1e2437f9a5d3c7b2e1f0a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
		Name:           "web-7d4b9c-x2x9q",
		Uid:            "0d9c1e56-8f0a-4c1b-9a3e-7b2d5f6e8a10",
		Namespace:      "shop",
		Labels:         map[string]string{"app": "web", "pod-template-hash": "7d4b9c", "tier": "frontend", "io.kubernetes.pod.name": "web-7d4b9c-x2x9q", "io.kubernetes.pod.namespace": "shop"},
		Annotations:    map[string]string{"kubernetes.io/config.seen": "2026-11-30T12:00:00.000000000Z", "kubernetes.io/config.source": "api", "example.com/owner": "team-a", "example.com/cost-center": "cc-1234", "example.com/tier": "gold"},
		RuntimeHandler: "runc",
		Linux:          &LinuxPodSandbox{CgroupParent: "/kubepods/burstable/pod0d9c1e56-8f0a-4c1b-9a3e-7b2d5f6e8a10"},
		Ips:            []string{"198.18.0.17", "fd00:198:18::17"},
	}
}

// testContainer is a typical kubelet container.
func testContainer(pod *PodSandbox, n int) *Container {
	return &Container{
		Id:           fmt.Sprintf("c%063d", n),
		PodSandboxId: pod.GetId(),
		Name:         "nginx",
		State:        ContainerState_CONTAINER_CREATED,
		Labels:       map[string]string{"io.kubernetes.container.name": "nginx", "io.kubernetes.pod.name": pod.GetName(), "io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.uid": pod.GetUid()},
		Annotations:  map[string]string{"io.kubernetes.container.hash": "5d1f2a", "io.kubernetes.container.restartCount": "0", "io.kubernetes.container.terminationMessagePath": "/dev/termination-log", "io.kubernetes.container.terminationMessagePolicy": "File"},
		Args:         []string{"nginx", "-g", "daemon off;"},
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_VERSION=1.27.3", "KUBERNETES_SERVICE_HOST=198.19.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_PORT=tcp://198.19.0.1:443", "HOSTNAME=web-7d4b9c-x2x9q", "HOME=/root", "TERM=xterm"},
		Mounts: []*Mount{
			{Destination: "/etc/hosts", Type: "bind", Source: "/var/lib/kubelet/pods/0d9c/etc-hosts", Options: []string{"rbind", "rprivate", "rw"}},
			{Destination: "/dev/termination-log", Type: "bind", Source: "/var/lib/kubelet/pods/0d9c/containers/nginx/1a2b", Options: []string{"rbind", "rprivate", "rw"}},
			{Destination: "/etc/hostname", Type: "bind", Source: "/var/lib/containerd/sandboxes/6b1a/hostname", Options: []string{"rbind", "rprivate", "rw"}},
			{Destination: "/etc/resolv.conf", Type: "bind", Source: "/var/lib/containerd/sandboxes/6b1a/resolv.conf", Options: []string{"rbind", "rprivate", "rw"}},
			{Destination: "/dev/shm", Type: "bind", Source: "/run/containerd/sandboxes/6b1a/shm", Options: []string{"rbind", "rprivate", "rw"}},
			{Destination: "/var/run/secrets/kubernetes.io/serviceaccount", Type: "bind", Source: "/var/lib/kubelet/pods/0d9c/volumes/token", Options: []string{"rbind", "rprivate", "ro"}},
		},
		Linux: &LinuxContainer{
			Namespaces:  []*LinuxNamespace{{Type: "pid"}, {Type: "ipc", Path: "/proc/4242/ns/ipc"}, {Type: "uts", Path: "/proc/4242/ns/uts"}, {Type: "mount"}, {Type: "network", Path: "/var/run/netns/cni-5e1f"}},
			CgroupsPath: "kubepods-burstable-pod0d9c1e56.slice:cri-containerd:" + pod.GetId()[:12],
		},
	}
}

// state builds a runtime state of pods and containers for Synchronize.
func state(pods, ctrs int) ([]*PodSandbox, []*Container) {
	var ps []*PodSandbox
	var cs []*Container
	for i := range pods {
		p := testPod()
		p.Id = fmt.Sprintf("%064d", i)
		ps = append(ps, p)
	}
	for i := range ctrs {
		cs = append(cs, testContainer(ps[i%len(ps)], i))
	}
	return ps, cs
}

// startProcessPlugin starts the benchmark binary as a plugin process and
// waits until it is synchronized.
func startProcessPlugin(b *testing.B, sock, idx, mode string) {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCH_PLUGIN_SOCKET="+sock, "BENCH_PLUGIN_IDX="+idx, "BENCH_PLUGIN_MODE="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		if l != "synced" {
			b.Fatalf("plugin process said %q", l)
		}
	case <-time.After(20 * time.Second):
		b.Fatal("plugin process did not synchronize")
	}
}

// setup starts a runtime and n plugins, in-process or as processes.
func setup(b *testing.B, n int, process bool, mode string) (*harness, []*plugin) {
	b.Helper()
	sock := filepath.Join(b.TempDir(), "nri.sock")
	h := newHarness(b, sock, nil, nil)
	var ps []*plugin
	for i := range n {
		idx := strconv.Itoa(10 + i)
		if process {
			startProcessPlugin(b, sock, idx, mode)
			continue
		}
		p := &plugin{name: "p" + idx, synced: make(chan struct{}, 1)}
		stop := startPlugin(b, handlerFor(p, mode), sock, idx)
		b.Cleanup(stop)
		select {
		case <-p.synced:
		case <-time.After(20 * time.Second):
			b.Fatal("plugin did not synchronize")
		}
		ps = append(ps, p)
	}
	h.awaitSync(n)
	return h, ps
}

func BenchmarkRunPodSandbox(b *testing.B) {
	for _, tc := range []struct {
		plugins int
		process bool
	}{{1, false}, {3, false}, {1, true}, {3, true}} {
		where := "inproc"
		if tc.process {
			where = "process"
		}
		b.Run(fmt.Sprintf("plugins=%d/%s", tc.plugins, where), func(b *testing.B) {
			h, ps := setup(b, tc.plugins, tc.process, "run")
			req := &RunPodSandboxRequest{Pod: testPod()}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := h.runPodSandbox(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, p := range ps {
				if p.pods < b.N {
					b.Fatalf("plugin %s saw %d of %d pods", p.name, p.pods, b.N)
				}
			}
		})
	}
}

func BenchmarkCreateContainer(b *testing.B) {
	for _, process := range []bool{false, true} {
		where := "inproc"
		if process {
			where = "process"
		}
		b.Run("plugins=3/"+where, func(b *testing.B) {
			h, _ := setup(b, 3, process, "create")
			pod := testPod()
			base := &CreateContainerRequest{Pod: pod, Container: testContainer(pod, 1)}
			ctx := context.Background()
			rsp, err := h.createContainer(ctx, proto.Clone(base).(*CreateContainerRequest))
			if err != nil {
				b.Fatal(err)
			}
			if err := checkMerged(rsp.GetAdjust()); err != nil {
				b.Fatal(err)
			}
			// The upstream runtime modifies the request, so every call gets
			// a fresh copy, made with the timer stopped.
			reqs := make([]*CreateContainerRequest, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if len(reqs) == 0 {
					b.StopTimer()
					for range min(1024, b.N-i) {
						reqs = append(reqs, proto.Clone(base).(*CreateContainerRequest))
					}
					b.StartTimer()
				}
				req := reqs[len(reqs)-1]
				reqs = reqs[:len(reqs)-1]
				if _, err := h.createContainer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRegisterSync measures a plugin joining a runtime that has 1000
// pods and 3000 containers: connect, register, configure, synchronize.
func BenchmarkRegisterSync(b *testing.B) {
	b.Run("pods=1000/containers=3000", func(b *testing.B) {
		pods, ctrs := state(1000, 3000)
		sock := filepath.Join(b.TempDir(), "nri.sock")
		h := newHarness(b, sock, pods, ctrs)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p := &plugin{name: "join", synced: make(chan struct{}, 1)}
			stop := startPlugin(b, runPodOnly{p}, sock, "50")
			<-p.synced
			h.awaitSync(1)
			b.StopTimer()
			stop()
			h.awaitSync(0)
			b.StartTimer()
		}
	})
}

// BenchmarkPodSandboxStatus measures a status round of the pod network
// extension (nrinet only): 3 plugins in separate processes asked in
// parallel, and a status served from the cache. Compare with
// RunPodSandbox/plugins=3/process of upstream, which calls its plugins one
// after another.
func BenchmarkPodSandboxStatus(b *testing.B) {
	if statusHandler(&plugin{}) == nil {
		b.Skip("upstream NRI has no PodSandboxStatus")
	}
	pod := testPod()
	pod.Linux.Namespaces = []*LinuxNamespace{{Type: "network", Path: "/var/run/netns/bench"}}
	b.Run("plugins=3/process", func(b *testing.B) {
		h, _ := setup(b, 3, true, "status")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := h.podSandboxStatus(ctx, pod, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plugins=3/cached", func(b *testing.B) {
		h, _ := setup(b, 3, true, "status")
		ctx := context.Background()
		if err := h.podSandboxStatus(ctx, pod, false); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := h.podSandboxStatus(ctx, pod, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRunPodSandboxConcurrent measures 32 RunPodSandbox calls made at
// once (a node starting many pods), with 3 plugins that each work 2 ms per
// pod: one op is the wall time until all 32 returned. Upstream holds one
// lock across every plugin call, so the calls queue: about 32 × 3 × 2 ms.
func BenchmarkRunPodSandboxConcurrent(b *testing.B) {
	b.Run("calls=32/plugins=3/work=2ms", func(b *testing.B) {
		h, _ := setup(b, 3, false, "slow")
		ctx := context.Background()
		reqs := make([]*RunPodSandboxRequest, 32)
		for i := range reqs {
			pod := testPod()
			pod.Id = fmt.Sprintf("%064d", i)
			reqs[i] = &RunPodSandboxRequest{Pod: pod}
		}
		for b.Loop() {
			var wg sync.WaitGroup
			for _, req := range reqs {
				wg.Go(func() {
					if err := h.runPodSandbox(ctx, req); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
	})
}

// BenchmarkJoinStall measures RunPodSandbox in a runtime of 1000 pods
// and 3000 containers, from 4 callers at once, each call a new pod: idle,
// and while a plugin joins it (a plugin process connects, registers,
// receives the whole state, about 5 MB, in Synchronize, and disconnects,
// every 100 ms), counting only the calls that overlap a join. It reports
// the median, 99th percentile and maximum of those calls' latency. The
// runtime's plugin works 2 ms per pod, as a network plugin does
// (work=2ms), or answers at once (work=0).
func BenchmarkJoinStall(b *testing.B) {
	for _, work := range []string{"2ms", "0"} {
		for _, joining := range []bool{false, true} {
			name := "idle"
			if joining {
				name = "joining"
			}
			b.Run("pods=1000/containers=3000/work="+work+"/"+name, func(b *testing.B) {
				benchJoinStall(b, work != "0", joining)
			})
		}
	}
}

// call is one timed RunPodSandbox.
type call struct{ start, end time.Time }

func benchJoinStall(b *testing.B, slow, joining bool) {
	pods, ctrs := state(1000, 3000)
	sock := filepath.Join(b.TempDir(), "nri.sock")
	h := newHarness(b, sock, pods, ctrs)
	p := &plugin{name: "p10", synced: make(chan struct{}, 1)}
	handler := any(runPodOnly{p})
	if slow {
		handler = slowPlugin{runPodOnly{p}}
	}
	b.Cleanup(startPlugin(b, handler, sock, "10"))
	<-p.synced
	h.awaitSync(1)

	var windows func() []call
	if joining {
		var stop func()
		stop, windows = startJoiner(b, sock)
		defer stop()
	}
	const callers = 4
	calls := make([][]call, callers)
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			// Every call is a new pod, as on a node.
			pods := make([]*PodSandbox, 64)
			for i := range pods {
				pods[i] = testPod()
				pods[i].Id = fmt.Sprintf("%02d%062d", c, i)
			}
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				req := &RunPodSandboxRequest{Pod: pods[n%64]}
				start := time.Now()
				if err := h.runPodSandbox(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
				calls[c] = append(calls[c], call{start, time.Now()})
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(calls...)
	if windows != nil {
		ws := windows()
		b.ReportMetric(float64(len(ws)), "joins")
		all = slices.DeleteFunc(all, func(c call) bool {
			return !slices.ContainsFunc(ws, func(w call) bool { return c.start.Before(w.end) && c.end.After(w.start) })
		})
	}
	if len(all) == 0 {
		return // a short run (b.N = 1) that no join overlapped
	}
	lat := make([]time.Duration, len(all))
	for i, c := range all {
		lat[i] = c.end.Sub(c.start)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// startJoiner starts the benchmark binary as a process that joins the
// runtime on sock every 100 ms; windows returns when each join began
// and ended, and stop ends the process.
func startJoiner(b *testing.B, sock string) (stop func(), windows func() []call) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCH_JOINER_SOCKET="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var (
		mu sync.Mutex
		ws []call
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var from, to int64
			if _, err := fmt.Sscan(sc.Text(), &from, &to); err == nil {
				mu.Lock()
				ws = append(ws, call{time.Unix(0, from), time.Unix(0, to)})
				mu.Unlock()
			}
		}
	}()
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-read
	}
	return stop, func() []call {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ws)
	}
}

// joinerProcess joins the runtime on sock every 100 ms, one connection
// after another, and prints when each join began and when the plugin was
// synchronized (Unix nanoseconds).
func joinerProcess(sock string) {
	for i := 0; ; i++ {
		time.Sleep(100 * time.Millisecond)
		p := &plugin{name: "join", synced: make(chan struct{}, 1)}
		s, err := newStub(runPodOnly{p}, sock, strconv.Itoa(50+i%50))
		begin := time.Now()
		if err == nil {
			err = s.Start(context.Background())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		<-p.synced
		fmt.Println(begin.UnixNano(), time.Now().UnixNano())
		s.Stop()
	}
}
