package netbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/runtime"
)

// binDir holds nri-podnet and nri-cni, built at the first benchmark that
// needs them (a run without -bench builds nothing).
var binDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "nrinet-netbench-")
	if err != nil {
		return "", err
	}
	return dir, testutil.GoBuild("", dir, nil, "github.com/nrinet/nrinet/cmd/nri-podnet", "github.com/nrinet/nrinet/cmd/nri-cni")
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, _ := binDir(); dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// setup launches one network plugin with its configuration and returns
// the runtime.
func setup(b *testing.B, plugin string) *runtime.Runtime {
	b.Helper()
	testutil.SkipUnlessRoot(b)
	dir := b.TempDir()
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	os.MkdirAll(pluginDir, 0o755)
	os.MkdirAll(confDir, 0o755)
	var conf any
	switch plugin {
	case "podnet":
		b.Cleanup(func() { testutil.DeleteLink("nrbenchpn0") })
		conf = map[string]any{"bridge": "nrbenchpn0", "subnets": []string{"198.18.240.0/22"}, "stateDir": filepath.Join(dir, "state")}
	case "cni":
		b.Cleanup(func() { testutil.DeleteLink("nrbenchcni0") })
		netDir := filepath.Join(dir, "net.d")
		os.MkdirAll(netDir, 0o755)
		list := map[string]any{
			"cniVersion": "1.0.0", "name": "nrbench",
			"plugins": []any{map[string]any{
				"type": "bridge", "bridge": "nrbenchcni0", "isGateway": true, "ipMasq": false,
				"ipam": map[string]any{
					"type": "host-local", "dataDir": filepath.Join(dir, "ipam"),
					"ranges": [][]map[string]string{{{"subnet": "198.18.244.0/22"}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			}},
		}
		raw, _ := json.Marshal(list)
		os.WriteFile(filepath.Join(netDir, "10-nrbench.conflist"), raw, 0o644)
		conf = map[string]any{"confDir": netDir, "binDirs": []string{testutil.CNIPluginDir(b)}, "cacheDir": filepath.Join(dir, "cache")}
	}
	raw, _ := json.Marshal(conf)
	os.WriteFile(filepath.Join(confDir, "10-"+plugin+".conf"), raw, 0o644)
	bins, err := binDir()
	if err != nil {
		b.Fatal(err)
	}
	os.Symlink(filepath.Join(bins, "nri-"+plugin), filepath.Join(pluginDir, "10-"+plugin))
	rt, err := runtime.New("netbench", "v0", runtime.WithPluginPath(pluginDir), runtime.WithPluginConfigPath(confDir),
		runtime.WithoutExternalPlugins(), runtime.WithRequiredNetworkPlugins(plugin), runtime.WithRequestTimeout(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Stop(context.Background()) })
	if ok, why := rt.NetworkReady(); !ok {
		b.Fatalf("%s did not join: %s", plugin, why)
	}
	return rt
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPodNetwork times, per pod, the RunPodSandbox (ADD) and
// StopPodSandbox (DEL) hooks of one network plugin through the runtime
// library. The pod's namespace is created before and deleted after each
// pod, with the timer stopped. Reported: medians of ADD, DEL and ADD+DEL.
func BenchmarkPodNetwork(b *testing.B) {
	for _, plugin := range []string{"podnet", "cni"} {
		b.Run("plugin="+plugin, func(b *testing.B) {
			rt := setup(b, plugin)
			ctx := context.Background()
			var adds, dels, both []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("nrbench-%s-%d", plugin, i%8)
				path := testutil.NewNetNS(b, name)
				pod := &api.PodSandbox{Id: fmt.Sprintf("bench-%s-%d", plugin, i), Name: "bench", Namespace: "bench", Uid: fmt.Sprint(i),
					Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: path}}}}
				b.StartTimer()
				t0 := time.Now()
				rec, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
				t1 := time.Now()
				if err != nil || len(rec.GetNetwork().GetIps()) == 0 {
					b.Fatalf("ADD: %v %v", rec, err)
				}
				if err := rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
					b.Fatalf("DEL: %v", err)
				}
				t2 := time.Now()
				b.StopTimer()
				testutil.DeleteNetNS(name)
				b.StartTimer()
				adds, dels, both = append(adds, t1.Sub(t0)), append(dels, t2.Sub(t1)), append(both, t2.Sub(t0))
			}
			b.ReportMetric(ms(median(adds)), "add-ms")
			b.ReportMetric(ms(median(dels)), "del-ms")
			b.ReportMetric(ms(median(both)), "add+del-ms")
		})
	}
}
