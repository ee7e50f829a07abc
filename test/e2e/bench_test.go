package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/testutil"
)

// criClient dials the daemon's CRI socket.
func criClient(b *testing.B, d *daemon) runtimeapi.RuntimeServiceClient {
	b.Helper()
	conn, err := grpc.NewClient("unix://"+d.criSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// startCNIPlugin runs nri-cni as an external plugin of the daemon, with a
// bridge + host-local network, and waits until the network is ready.
func startCNIPlugin(b *testing.B, d *daemon, c runtimeapi.RuntimeServiceClient) {
	b.Helper()
	bin := filepath.Join(d.dir, "nri-cni")
	if err := testutil.GoBuild("", d.dir, nil, "github.com/nrinet/nrinet/cmd/nri-cni"); err != nil {
		b.Fatal(err)
	}
	bridge := "nrbc" + randHex(4)
	b.Cleanup(func() { testutil.DeleteLink(bridge) })
	netDir := filepath.Join(d.dir, "net.d")
	os.MkdirAll(netDir, 0o755)
	list, _ := json.Marshal(map[string]any{
		"cniVersion": "1.0.0", "name": "nrbench-e2e",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": false,
			"ipam": map[string]any{
				"type": "host-local", "dataDir": filepath.Join(d.dir, "host-local"),
				"ranges": [][]map[string]string{{{"subnet": "198.18.230.0/24"}}},
				"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
			},
		}},
	})
	os.WriteFile(filepath.Join(netDir, "10-nrbench.conflist"), list, 0o644)
	conf, _ := json.Marshal(map[string]any{"confDir": netDir, "binDirs": []string{testutil.CNIPluginDir(b)}, "cacheDir": filepath.Join(d.dir, "cni-cache")})
	confFile := filepath.Join(d.dir, "nri-cni.json")
	os.WriteFile(confFile, conf, 0o644)
	cmd := exec.Command(bin, "-config", confFile, "-socket", d.nriSock, "-name", "cni", "-idx", "10")
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.WaitFor(b, "nri-cni to join", 20*time.Second, func() bool {
		st, err := c.Status(context.Background(), &runtimeapi.StatusRequest{})
		if err != nil {
			return false
		}
		for _, cond := range st.GetStatus().GetConditions() {
			if cond.GetType() == runtimeapi.NetworkReady {
				return cond.GetStatus()
			}
		}
		return false
	})
}

func podRequest(i int) *runtimeapi.RunPodSandboxRequest {
	uid := fmt.Sprintf("bench-%d-%s", i, randHex(3))
	return &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("bench-%d", i), Namespace: "bench", Uid: uid},
		Labels:   map[string]string{"app": "bench"},
	}}
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRunPodSandbox measures, over gRPC, CRI RunPodSandbox until the
// sandbox is READY with its addresses (nrinetd answers only then), with
// nri-podnet or with nri-cni (bridge + host-local) as the network plugin.
// Each pod is stopped and removed with the timer stopped.
func BenchmarkRunPodSandbox(b *testing.B) {
	for _, plugin := range []string{"podnet", "cni"} {
		b.Run("plugin="+plugin, func(b *testing.B) {
			d := newDaemon(b, daemonConfig{podnet: plugin == "podnet", required: []string{plugin}})
			c := criClient(b, d)
			if plugin == "cni" {
				startCNIPlugin(b, d, c)
			}
			ctx := context.Background()
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				rsp, err := c.RunPodSandbox(ctx, podRequest(i))
				took := time.Since(t0)
				if err != nil {
					b.Fatalf("RunPodSandbox: %v\n%s", err, d.log)
				}
				lat = append(lat, took)
				b.StopTimer()
				st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: rsp.GetPodSandboxId()})
				if err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || st.GetStatus().GetNetwork().GetIp() == "" {
					b.Fatalf("sandbox not READY with an IP: %v %v", st, err)
				}
				c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: rsp.GetPodSandboxId()})
				c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rsp.GetPodSandboxId()})
				b.StartTimer()
			}
			b.ReportMetric(ms(quantile(lat, 0.5)), "p50-ms")
			b.ReportMetric(ms(quantile(lat, 0.99)), "p99-ms")
		})
	}
}

// BenchmarkPodSandboxStatus measures CRI PodSandboxStatus over gRPC with
// 100 READY pods on nri-podnet, as the kubelet's PLEG asks: non-verbose
// (served from nrinetd's store and the runtime library's short cache) and
// verbose (which always asks the plugins).
func BenchmarkPodSandboxStatus(b *testing.B) {
	d := newDaemon(b, daemonConfig{podnet: true, required: []string{"podnet"}})
	c := criClient(b, d)
	ctx := context.Background()
	var ids []string
	for i := range 100 {
		rsp, err := c.RunPodSandbox(ctx, podRequest(i))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, rsp.GetPodSandboxId())
		d.ids = append(d.ids, rsp.GetPodSandboxId())
	}
	b.Cleanup(func() {
		for _, id := range ids {
			c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
			c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		}
	})
	for _, verbose := range []bool{false, true} {
		b.Run(fmt.Sprintf("pods=100/verbose=%v", verbose), func(b *testing.B) {
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: ids[i%len(ids)], Verbose: verbose})
				lat = append(lat, time.Since(t0))
				if err != nil || st.GetStatus().GetNetwork().GetIp() == "" {
					b.Fatalf("status: %v %v", st, err)
				}
			}
			b.ReportMetric(float64(quantile(lat, 0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(quantile(lat, 0.99).Microseconds()), "p99-µs")
		})
	}
}
