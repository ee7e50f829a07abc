package containerde2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nrinet/nrinet/internal/testutil"
)

// A benchTarget is a CRI runtime with a pod network, as the benchmark
// drives it: crictl against its socket, and its own timing of the
// network setup.
type benchTarget struct {
	tb testing.TB
	// crictl runs crictl against the runtime.
	crictl func(args ...string) (string, string, error)
	// podConfig writes a pod sandbox configuration named name and returns
	// its path.
	podConfig func(name string) string
	// metricsURL is the runtime's Prometheus endpoint; netMetric and
	// netLabel select the histogram (its sum, in seconds) that times the
	// network setup of a pod, and the label that selects it.
	metricsURL           string
	netMetric            string
	netLabel, netLabelIs string
	// bridge is the bridge the pods' host veths are attached to.
	bridge string
}

// BenchmarkRunPodSandbox measures crictl runp until it returns the pod's
// ID (the pod is READY with its network then), one pod per iteration,
// each stopped and removed (untimed) before the next, on four runtimes:
// stock containerd with CNI (the bridge conflist of scenario 1),
// containerd on nrinet in network mode nri with nri-cni (the same kind of
// conflist) or nri-podnet, and nrinetd with nri-podnet. net-ms/op is the
// runtime's own timing of the network part: containerd's
// network_plugin_operations_duration_seconds{operation_type="set_up_pod"}
// (CNI setup, or in nri mode the NRI RunPodSandbox call that returns the
// network), nrinetd's nrinet_nrinetd_nri_hook_duration_seconds{event="RunPodSandbox"}.
// One warm-up pod per runtime is not measured (the first unpacks the
// pause image). Run it as make bench-containerd does:
//
//	NRINET_CONTAINERD_E2E=1 go test -run '^$' -bench RunPodSandbox -benchtime 1x -count 20 .
func BenchmarkRunPodSandbox(b *testing.B) {
	skipUnlessEnabled(b)
	for _, bc := range []struct {
		name  string
		start func(b *testing.B) *benchTarget
	}{
		{"runtime=containerd/network=cni", func(b *testing.B) *benchTarget {
			c := startContainerd(b, options{nri: "upstream", network: networkCNI, metrics: true})
			return c.benchTarget(c.cni.bridge)
		}},
		{"runtime=containerd-nrinet/network=cni", func(b *testing.B) *benchTarget {
			c := startContainerd(b, options{nri: "compat", network: networkCNI, metrics: true})
			return c.benchTarget(c.cni.bridge)
		}},
		{"runtime=containerd-nrinet/network=nri-cni", func(b *testing.B) *benchTarget {
			c := startContainerd(b, options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"cni"}, metrics: true})
			_, bridge, _ := cniPlugin.start(c)
			c.waitNetworkReady(true)
			return c.benchTarget(bridge)
		}},
		{"runtime=containerd-nrinet/network=nri-podnet", func(b *testing.B) *benchTarget {
			c := startContainerd(b, options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"podnet"}, metrics: true})
			_, bridge, _ := podnetPlugin.start(c)
			c.waitNetworkReady(true)
			return c.benchTarget(bridge)
		}},
		{"runtime=nrinetd/network=nri-podnet", startNrinetd},
	} {
		b.Run(bc.name, func(b *testing.B) {
			target := bc.start(b)
			target.runPod("warmup")
			var net float64
			b.ResetTimer()
			for i := range b.N {
				before := target.netSeconds()
				id := target.runp(fmt.Sprintf("bench-%d", i))
				b.StopTimer()
				net += target.netSeconds() - before
				target.remove(id)
				b.StartTimer()
			}
			b.ReportMetric(net*1e3/float64(b.N), "net-ms/op")
		})
	}
}

// runPod runs and removes one pod, unmeasured.
func (bt *benchTarget) runPod(name string) {
	bt.tb.Helper()
	bt.remove(bt.runp(name))
}

// runp runs crictl runp and returns the pod's ID.
func (bt *benchTarget) runp(name string) string {
	bt.tb.Helper()
	out, errOut, err := bt.crictl("runp", bt.podConfig(name))
	if err != nil {
		bt.tb.Fatalf("crictl runp %s: %v\n%s%s", name, err, out, errOut)
	}
	return strings.TrimSpace(out)
}

// remove stops and removes a pod, checks that it was READY, and waits
// until its host veth is gone: nri-podnet deletes it in the background,
// CNI's bridge plugin before DEL returns, and the kernel's veth teardown
// would otherwise run into the next pod's setup.
func (bt *benchTarget) remove(id string) {
	bt.tb.Helper()
	out, errOut, err := bt.crictl("inspectp", "-o", "go-template", "--template", "{{.status.state}}", id)
	if err != nil || strings.TrimSpace(out) != "SANDBOX_READY" {
		bt.tb.Fatalf("pod %s: state %q, want SANDBOX_READY: %v %s", id, strings.TrimSpace(out), err, errOut)
	}
	for _, verb := range []string{"stopp", "rmp"} {
		if out, errOut, err := bt.crictl(verb, id); err != nil {
			bt.tb.Fatalf("crictl %s %s: %v\n%s%s", verb, id, err, out, errOut)
		}
	}
	if err := waitFor("the pod's host veth to go", func() (bool, error) {
		return len(bridgePorts(bt.tb, bt.bridge)) == 0, nil
	}); err != nil {
		bt.tb.Fatalf("bridge %s: %v (ports %v)", bt.bridge, err, bridgePorts(bt.tb, bt.bridge))
	}
}

// netSeconds scrapes the runtime's metrics and returns the sum of its
// network setup histogram.
func (bt *benchTarget) netSeconds() float64 {
	bt.tb.Helper()
	resp, err := http.Get(bt.metricsURL)
	if err != nil {
		bt.tb.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		bt.tb.Fatalf("metrics of %s: %v", bt.metricsURL, err)
	}
	// The warm-up pod made the runtime observe one setup at least.
	for _, m := range families[bt.netMetric].GetMetric() {
		if hasLabel(m, bt.netLabel, bt.netLabelIs) {
			return m.GetHistogram().GetSampleSum()
		}
	}
	bt.tb.Fatalf("metrics of %s: no %s{%s=%q}", bt.metricsURL, bt.netMetric, bt.netLabel, bt.netLabelIs)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// freeAddr returns a loopback TCP address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// benchTarget returns the instance as a benchmark target; it must run
// with metrics.
func (c *containerd) benchTarget(bridge string) *benchTarget {
	c.t.Helper()
	if c.metricsAddr == "" {
		c.t.Fatal("containerd started without metrics")
	}
	return &benchTarget{
		tb: c.t, crictl: c.crictl, bridge: bridge,
		podConfig: func(name string) string {
			return c.writeJSON("pod-"+name+".json", map[string]any{
				"metadata":      map[string]any{"name": name, "namespace": "nrinet-bench", "uid": name + "-" + c.token, "attempt": 0},
				"log_directory": filepath.Join(c.dir, "logs", name),
				"linux":         map[string]any{"cgroup_parent": c.cgroupParent},
			})
		},
		metricsURL: "http://" + c.metricsAddr + "/v1/metrics",
		// containerd's timer adds "_seconds" to a name that has it.
		netMetric: "containerd_cri_network_plugin_operations_duration_seconds_seconds",
		netLabel:  "operation_type", netLabelIs: "set_up_pod",
	}
}

// startNrinetd starts nrinetd with everything under a directory of its
// own and nri-podnet, started by hand on its NRI socket and required; the
// cleanup removes every pod, stops both and removes the bridge and the
// directory.
func startNrinetd(b *testing.B) *benchTarget {
	b.Helper()
	token := randHex(4)
	dir := filepath.Join(os.TempDir(), "nrbd-"+token)
	for _, d := range []string{"plugins", "conf.d", "state", "podnet", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	criSock, nriSock := filepath.Join(dir, "cri.sock"), filepath.Join(dir, "nri.sock")
	metrics := freeAddr(b)
	log := &testutil.LogBuffer{}
	nrinetd := exec.Command(env.nrinetd, "-cri-socket", criSock, "-nri-socket", nriSock,
		"-plugin-dir", filepath.Join(dir, "plugins"), "-plugin-config-dir", filepath.Join(dir, "conf.d"),
		"-state-dir", filepath.Join(dir, "state"), "-required-network-plugins", "podnet",
		"-http-address", metrics, "-log-level", "warn")
	nrinetd.Stdout, nrinetd.Stderr = log, log
	net := newIPNet(b)
	bridge := "nrbd" + token
	conf := filepath.Join(dir, "podnet.json")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `{"bridge": %q, "subnets": [%q, %q], "stateDir": %q}`,
		bridge, net.v4, net.v6, filepath.Join(dir, "podnet")), 0o600); err != nil {
		b.Fatal(err)
	}
	podnet := exec.Command(env.podnet, "-config", conf, "-socket", nriSock, "-idx", "10", "-name", "podnet")
	podnet.Stdout, podnet.Stderr = log, log
	crictl := func(args ...string) (string, string, error) {
		ep := "unix://" + criSock
		cmd := exec.Command(env.crictl, append([]string{"--config", filepath.Join(dir, "crictl.yaml"),
			"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "20s"}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	if err := os.WriteFile(filepath.Join(dir, "crictl.yaml"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if out, _, err := crictl("pods", "-q"); err == nil {
			for _, id := range strings.Fields(out) {
				if _, errOut, err := crictl("rmp", "-f", id); err != nil {
					b.Errorf("crictl rmp -f %s: %v\n%s", id, err, errOut)
				}
			}
		}
		for _, cmd := range []*exec.Cmd{podnet, nrinetd} {
			if cmd.Process != nil {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			}
		}
		if b.Failed() {
			b.Logf("nrinetd and nri-podnet log:\n%s", log)
		}
		if ports := bridgePorts(b, bridge); len(ports) > 0 {
			b.Errorf("bridge %s still has ports %v", bridge, ports)
		}
		if err := exec.Command("ip", "link", "del", bridge).Run(); err != nil && !os.IsNotExist(err) {
			if _, serr := os.Stat(filepath.Join(sysClassNet, bridge)); serr == nil {
				b.Errorf("deleting bridge %s: %v", bridge, err)
			}
		}
		os.RemoveAll(dir)
	})
	if err := nrinetd.Start(); err != nil {
		b.Fatal(err)
	}
	if err := podnet.Start(); err != nil {
		b.Fatal(err)
	}
	// Ready: the CRI socket answers and NetworkReady is true (nri-podnet
	// joined).
	if err := testutil.Poll(networkReadyTimeout, 50*time.Millisecond, testutil.Until("nrinetd ready with nri-podnet", func() bool {
		out, _, err := crictl("info")
		if err != nil {
			return false
		}
		info, err := parseInfo(out)
		return err == nil && info.runtimeReady && info.networkReady
	})); err != nil {
		b.Fatalf("%v\n%s", err, log)
	}
	return &benchTarget{
		tb: b, crictl: crictl, bridge: bridge,
		podConfig: func(name string) string {
			path := filepath.Join(dir, "pod-"+name+".json")
			if err := os.WriteFile(path, fmt.Appendf(nil, `{"metadata": {"name": %q, "namespace": "nrinet-bench", "uid": %q, "attempt": 0}, "log_directory": %q}`,
				name, name+"-"+token, filepath.Join(dir, "logs", name)), 0o600); err != nil {
				b.Fatal(err)
			}
			return path
		},
		metricsURL: "http://" + metrics + "/metrics",
		netMetric:  "nrinet_nrinetd_nri_hook_duration_seconds",
		netLabel:   "event", netLabelIs: "RunPodSandbox",
	}
}
