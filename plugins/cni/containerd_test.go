package cni_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

// These tests hold nri-cni to what containerd v2.4.2 passes to CNI for the
// same pod. The expected values are written out from containerd's source,
// not computed by nri-cni's code:
//
//   - internal/cri/server/sandbox_run.go, cniNamespaceOpts: CNI_ARGS from
//     toCNILabels (K8S_POD_NAMESPACE, K8S_POD_NAME,
//     K8S_POD_INFRA_CONTAINER_ID = sandbox ID, K8S_POD_UID, IgnoreUnknown=1;
//     go-cni's Namespace.config appends them in map order, so containerd
//     has no fixed order and the tests compare them as a set); the
//     capability io.kubernetes.cri.pod-annotations (the pod's annotations,
//     always, null when there are none); portMappings (toCNIPortMappings:
//     mappings with a host port > 0, protocol lower-cased) when there are
//     any; bandwidth (toCNIBandWidth: the kubernetes.io/ingress-bandwidth
//     and egress-bandwidth annotations as Kubernetes quantities in bits
//     per second, bursts math.MaxUint32) when either is set; dns
//     (toCNIDNS) when the pod has a DNS configuration; cgroupPath (the
//     cgroup parent) when it is set.
//   - go-cni v1.1.14 (types.go): PortMapping{HostPort, ContainerPort,
//     Protocol, HostIP}, BandWidth{IngressRate, IngressBurst, EgressRate,
//     EgressBurst} and DNS{Servers, Searches, Options} have no JSON tags,
//     so those are the keys on the wire; ifName "eth0" for the default
//     network (prefix "eth", index 0); the sandbox's netns path.
//   - service_linux.go, cniLoadOptions: the loopback network "cni-loopback"
//     (cniVersion 0.3.1, type loopback, ifName "lo") first, unless
//     use_internal_loopback is set.

// containerdArgs is CNI_ARGS as containerd passes it for pod, as a set.
func containerdArgs(pod *api.PodSandbox) map[string]string {
	return map[string]string{
		"IgnoreUnknown":              "1",
		"K8S_POD_NAMESPACE":          pod.GetNamespace(),
		"K8S_POD_NAME":               pod.GetName(),
		"K8S_POD_INFRA_CONTAINER_ID": pod.GetId(),
		"K8S_POD_UID":                pod.GetUid(),
	}
}

// parseCNIArgs splits CNI_ARGS ("K=V;K=V") into a map, failing on a key
// given twice.
func parseCNIArgs(t testing.TB, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("CNI_ARGS %q: %q is not K=V", s, kv)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("CNI_ARGS %q: %s given twice", s, k)
		}
		out[k] = v
	}
	return out
}

// runtimeConfig returns the runtimeConfig libcni put into a record's
// plugin configuration, nil if none.
func runtimeConfig(t testing.TB, r record) map[string]any {
	t.Helper()
	var conf struct {
		RuntimeConfig map[string]any `json:"runtimeConfig"`
	}
	if err := json.Unmarshal(r.Stdin, &conf); err != nil {
		t.Fatal(err)
	}
	return conf.RuntimeConfig
}

// checkLikeContainerd checks the environment and runtimeConfig of an ADD
// record of pod against containerd's.
func checkLikeContainerd(t testing.TB, r record, pod *api.PodSandbox, binDirs string, wantRC map[string]any) {
	t.Helper()
	if got, want := parseCNIArgs(t, r.Env["CNI_ARGS"]), containerdArgs(pod); !cmp.Equal(got, want) {
		t.Errorf("CNI_ARGS (-got +want):\n%s", cmp.Diff(got, want))
	}
	for k, want := range map[string]string{
		"CNI_CONTAINERID": pod.GetId(),
		"CNI_NETNS":       pod.NetNSPath(),
		"CNI_IFNAME":      "eth0",
		"CNI_PATH":        binDirs,
	} {
		if got := r.Env[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := runtimeConfig(t, r); !cmp.Equal(got, wantRC) {
		t.Errorf("runtimeConfig (-got +want):\n%s", cmp.Diff(got, wantRC))
	}
}

// lo reports whether the pod's loopback interface is up.
func loUp(t testing.TB, ns string) bool {
	t.Helper()
	var links []struct {
		Flags []string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(testutil.Run(t, "ip", "-n", ns, "-j", "link", "show", "dev", "lo")), &links); err != nil {
		t.Fatal(err)
	}
	return len(links) == 1 && strings.Contains(strings.Join(links[0].Flags, ","), "UP")
}

// TestCNI_ArgsLikeContainerd adds pods of different shapes to a network of
// bridge and the recorder, and checks that every plugin gets the
// CNI_ARGS, capability arguments, interface and netns containerd would
// pass, that the loopback network came up, and that a pod whose bandwidth
// annotation containerd refuses is refused before any plugin runs.
func TestCNI_ArgsLikeContainerd(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	recDir := t.TempDir()
	tn := newTestNet(t, "1.0.0", "198.18.106.0/24")
	tn.noPortmap = true
	tn.extra = []map[string]any{recorderPlugin(recDir, "")}
	tn.extraBinDirs = []string{recorderBinDir(t)}
	tn.writeConflist(t, "10-nrinet-test.conflist", tn.subnets...)
	p := newHandler(t, tn)
	binDirs := strings.Join(tn.config().BinDirs, ":")
	burst := float64(math.MaxUint32)

	for _, tc := range []struct {
		name  string
		shape func(pod *api.PodSandbox)
		want  map[string]any // runtimeConfig
	}{
		{
			name: "everything",
			shape: func(pod *api.PodSandbox) {
				pod.Annotations = map[string]string{
					"kubernetes.io/ingress-bandwidth": "10M",
					"kubernetes.io/egress-bandwidth":  "1.5Mi",
					"example.test/note":               "x",
				}
				pod.Linux.CgroupParent = "/kubepods/besteffort/pod" + pod.GetUid()
				pod.PortMappings = []*api.PortMapping{
					{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 80, HostPort: 18080, HostIp: "198.18.106.1"},
					{Protocol: api.Protocol_PROTOCOL_UDP, ContainerPort: 53, HostPort: 18053},
					{Protocol: api.Protocol_PROTOCOL_SCTP, ContainerPort: 9, HostPort: 18009, HostIp: "fd00:198:18::1"},
					{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 8443}, // no host port: left out
				}
				pod.DnsConfig = &api.PodDNSConfig{
					Servers:  []string{"198.18.0.53", "fd00:198:18::53"},
					Searches: []string{"default.svc.example.test", "svc.example.test"},
					Options:  []string{"ndots:5", "edns0"},
				}
			},
			want: map[string]any{
				"io.kubernetes.cri.pod-annotations": map[string]any{
					"kubernetes.io/ingress-bandwidth": "10M",
					"kubernetes.io/egress-bandwidth":  "1.5Mi",
					"example.test/note":               "x",
				},
				"portMappings": []any{
					map[string]any{"HostPort": 18080.0, "ContainerPort": 80.0, "Protocol": "tcp", "HostIP": "198.18.106.1"},
					map[string]any{"HostPort": 18053.0, "ContainerPort": 53.0, "Protocol": "udp", "HostIP": ""},
					map[string]any{"HostPort": 18009.0, "ContainerPort": 9.0, "Protocol": "sctp", "HostIP": "fd00:198:18::1"},
				},
				// 10M = 10^7; 1.5Mi = 1.5 * 2^20 = 1572864.
				"bandwidth": map[string]any{"IngressRate": 1e7, "IngressBurst": burst, "EgressRate": 1572864.0, "EgressBurst": burst},
				"dns": map[string]any{
					"Servers":  []any{"198.18.0.53", "fd00:198:18::53"},
					"Searches": []any{"default.svc.example.test", "svc.example.test"},
					"Options":  []any{"ndots:5", "edns0"},
				},
				"cgroupPath": "/kubepods/besteffort/pod{uid}",
			},
		},
		{
			name:  "bare pod",
			shape: func(*api.PodSandbox) {},
			want:  map[string]any{"io.kubernetes.cri.pod-annotations": nil},
		},
		{
			name: "declared ports only, egress only, empty DNS configuration",
			shape: func(pod *api.PodSandbox) {
				pod.Annotations = map[string]string{"kubernetes.io/egress-bandwidth": "100k"}
				pod.PortMappings = []*api.PortMapping{{ContainerPort: 80}}
				pod.DnsConfig = &api.PodDNSConfig{}
			},
			want: map[string]any{
				"io.kubernetes.cri.pod-annotations": map[string]any{"kubernetes.io/egress-bandwidth": "100k"},
				"bandwidth":                         map[string]any{"IngressRate": 0.0, "IngressBurst": 0.0, "EgressRate": 1e5, "EgressBurst": burst},
				"dns":                               map[string]any{"Servers": nil, "Searches": nil, "Options": nil},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, ns := newPod(t, 1)
			tc.shape(pod)
			if cg, ok := tc.want["cgroupPath"].(string); ok {
				tc.want["cgroupPath"] = strings.ReplaceAll(cg, "{uid}", pod.GetUid())
			}
			if _, err := p.RunPodSandboxNetwork(ctx, pod); err != nil {
				t.Fatal(err)
			}
			adds := records(t, recDir, "ADD", pod.GetId())
			if len(adds) != 1 {
				t.Fatalf("recorder saw %d ADDs of the pod, want 1", len(adds))
			}
			checkLikeContainerd(t, adds[0], pod, binDirs, tc.want)
			if !loUp(t, ns) {
				t.Error("lo is not up in the pod: the loopback network did not run")
			}
			if err := p.StopPodSandbox(ctx, pod); err != nil {
				t.Fatal(err)
			}
			dels := records(t, recDir, "DEL", pod.GetId())
			if len(dels) != 1 {
				t.Fatalf("recorder saw %d DELs of the pod, want 1", len(dels))
			}
			// DEL gets what ADD got (libcni's cached arguments).
			checkLikeContainerd(t, dels[0], pod, binDirs, tc.want)
		})
	}

	t.Run("bandwidth containerd refuses", func(t *testing.T) {
		for _, tc := range []struct{ value, want string }{
			{"10 M", "kubernetes.io/ingress-bandwidth"},
			{"999", "unreasonably small (< 1kbit)"},
			{"2P", "unreasonably large (> 1Pbit)"},
		} {
			pod, _ := newPod(t, 2)
			pod.Annotations = map[string]string{"kubernetes.io/ingress-bandwidth": tc.value}
			_, err := p.RunPodSandboxNetwork(ctx, pod)
			mustContain(t, err, tc.want, tc.value)
			if adds := records(t, recDir, "ADD", pod.GetId()); len(adds) != 0 {
				t.Errorf("%q: a plugin was called", tc.value)
			}
		}
	})
}

// TestCNI_Loopback: by default the pod's lo comes up through the loopback
// network cni-loopback (cniVersion 0.3.1, plugin loopback, ifName lo),
// run before the pod's network, as containerd does; libcni caches it as an
// attachment of its own, and StopPodSandbox deletes it. With
// useInternalLoopback (containerd's use_internal_loopback) lo is set up
// directly: the loopback plugin need not be installed and no attachment
// is cached for it.
func TestCNI_Loopback(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name     string
		internal bool
	}{
		{"loopback network", false},
		{"useInternalLoopback", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTestNet(t, "1.0.0", fmt.Sprintf("198.18.%d.0/24", 116+i))
			tn.noPortmap = true
			cfg := tn.config()
			if tc.internal {
				// bridge and host-local only: no loopback plugin.
				bin := t.TempDir()
				for _, typ := range []string{"bridge", "host-local"} {
					if err := os.Symlink(filepath.Join(tn.binDir, typ), filepath.Join(bin, typ)); err != nil {
						t.Fatal(err)
					}
				}
				cfg.BinDirs = []string{bin}
				cfg.UseInternalLoopback = true
			}
			tn.writeConflist(t, "10-nrinet-test.conflist", tn.subnets...)
			logger, _ := newLogger(t)
			p, err := cni.New(ctx, cni.WithConfig(cfg), cni.WithLogger(logger))
			if err != nil {
				t.Fatal(err)
			}
			if lo := p.Network().Loopback; (lo == nil) != tc.internal {
				t.Fatalf("loaded loopback network %v, want one: %v", lo, !tc.internal)
			} else if lo != nil && (lo.Name != cni.LoopbackNetwork || lo.CNIVersion != "0.3.1" ||
				len(lo.Plugins) != 1 || lo.Plugins[0].Network.Type != "loopback") {
				t.Errorf("loopback network %s %s with %d plugins, want %s 0.3.1 with one of type loopback",
					lo.Name, lo.CNIVersion, len(lo.Plugins), cni.LoopbackNetwork)
			}
			pod, ns := newPod(t, 1)
			if _, err := p.RunPodSandboxNetwork(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if !loUp(t, ns) {
				t.Error("lo is not up in the pod")
			}
			// libcni names its cache entries <network>-<container ID>-<ifname>.
			loEntries := tn.cacheFiles(t, cni.LoopbackNetwork+"-"+pod.GetId()+"-"+cni.LoopbackIfName)
			netEntries := tn.cacheFiles(t, tn.name+"-"+pod.GetId()+"-"+cni.IfName)
			if want := !tc.internal; (len(loEntries) > 0) != want || len(netEntries) == 0 {
				t.Errorf("libcni cache entries: loopback %v (want some: %v), network %v (want some)", loEntries, want, netEntries)
			}
			if err := p.StopPodSandbox(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if left := tn.cacheFiles(t, pod.GetId()); len(left) != 0 {
				t.Errorf("libcni cache entries left after StopPodSandbox: %v", left)
			}
		})
	}
}
