package cni_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

// TestPlugin_ThreePods runs nri-cni as a pre-installed plugin of a
// runtime and walks three pods through RunPodSandbox, a verbose
// PodSandboxStatus and StopPodSandbox on a bridge network, single and dual
// stack.
func TestPlugin_ThreePods(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, tc := range []struct {
		name    string
		subnets []string
	}{
		{"ipv4", []string{"198.18.100.0/24"}},
		{"dual-stack", []string{"198.18.104.0/24", "fd00:198:18:100::/64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tn := newTestNet(t, "1.0.0", tc.subnets...)
			rt, _ := startRuntime(t, tn)

			type podInfo struct {
				pod *api.PodSandbox
				ns  string
				rec *api.PodNetworkRecord
			}
			var pods []podInfo
			for i := range 3 {
				pod, ns := newPod(t, i)
				rec, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
				if err != nil {
					t.Fatalf("RunPodSandbox pod%d: %v", i, err)
				}
				ips := rec.GetNetwork().GetIps()
				if len(ips) != len(tc.subnets) {
					t.Fatalf("pod%d: ips = %v, want one per subnet %v", i, ips, tc.subnets)
				}
				for j, ip := range ips {
					if a := netip.MustParseAddr(ip); !netip.MustParsePrefix(tc.subnets[j]).Contains(a) {
						t.Errorf("pod%d: address %s is not in %s", i, ip, tc.subnets[j])
					}
				}
				if got := eth0Addrs(t, ns); !sameSet(got, ips) {
					t.Errorf("pod%d: eth0 in netns has %v, the runtime got %v", i, got, ips)
				}
				info := rec.GetNetwork().GetInfo()
				if info[cni.InfoNetwork] != tn.name || info[cni.InfoCNIVersion] != "1.0.0" {
					t.Errorf("pod%d: info = %v", i, info)
				}
				pods = append(pods, podInfo{pod, ns, rec})
			}

			for _, from := range pods {
				for _, to := range pods {
					if from.ns == to.ns {
						continue
					}
					for _, ip := range to.rec.GetNetwork().GetIps() {
						ping(t, from.ns, ip)
					}
				}
			}

			for i, p := range pods {
				rec, err := rt.PodSandboxStatus(ctx, p.pod, p.rec, true)
				if err != nil {
					t.Fatalf("PodSandboxStatus pod%d: %v", i, err)
				}
				if len(rec.GetStale()) != 0 {
					t.Errorf("pod%d: stale = %v", i, rec.GetStale())
				}
				if got, want := rec.GetNetwork().GetIps(), p.rec.GetNetwork().GetIps(); !slices.Equal(got, want) {
					t.Errorf("pod%d: status ips = %v, want %v", i, got, want)
				}
				if check := rec.GetNetwork().GetInfo()[cni.InfoCheck]; check != "ok" {
					t.Errorf("pod%d: check = %q, want ok", i, check)
				}
			}

			if got := tn.addressFiles(t); len(got) != len(pods)*len(tc.subnets) {
				t.Errorf("host-local reservations before stop: %v", got)
			}
			for i, p := range pods {
				if err := rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: p.pod}); err != nil {
					t.Errorf("StopPodSandbox pod%d: %v", i, err)
				}
			}
			if got := tn.addressFiles(t); len(got) != 0 {
				t.Errorf("host-local reservations left after stop: %v", got)
			}
			if got := tn.bridgePorts(t); len(got) != 0 {
				t.Errorf("interfaces left on bridge %s after stop: %v", tn.bridge, got)
			}
			for _, p := range pods {
				testutil.DeleteNetNS(p.ns)
			}
		})
	}
}

// TestPlugin_CNIErrorThroughRuntime exhausts a /30 range: the second pod's
// ADD fails, and the runtime's error names the plugin and carries the CNI
// error's code and message. The failed ADD leaves nothing behind.
func TestPlugin_CNIErrorThroughRuntime(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	tn := newTestNet(t, "1.0.0", "198.18.101.0/30") // one address: .2 (.1 is the gateway)
	rt, _ := startRuntime(t, tn)

	first, _ := newPod(t, 1)
	if _, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: first}); err != nil {
		t.Fatal(err)
	}
	second, _ := newPod(t, 2)
	_, err := rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: second})
	mustContain(t, err,
		`plugin "10-cni": RunPodSandbox`,
		`CNI network "nrinet-test" ADD failed: plugin type="bridge"`,
		"code 999: ",
		"no IP addresses available in range set: 198.18.101.1-198.18.101.2")

	if got := tn.bridgePorts(t); len(got) != 1 {
		t.Errorf("bridge ports = %v, want only the first pod's", got)
	}
	if got := tn.addressFiles(t); !slices.Equal(got, []string{"198.18.101.2"}) {
		t.Errorf("reservations = %v, want the first pod's", got)
	}
	for _, pod := range []*api.PodSandbox{second, first} { // the failed pod too: idempotent
		if err := rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
			t.Errorf("StopPodSandbox %s: %v", pod.Name, err)
		}
	}
	if got := tn.addressFiles(t); len(got) != 0 {
		t.Errorf("reservations left: %v", got)
	}
}

// newHandler returns the plugin handler in-process, configured for tn.
func newHandler(t *testing.T, tn *testNet) *cni.Plugin {
	t.Helper()
	logger, _ := newLogger(t)
	p, err := cni.New(context.Background(), cni.WithConfig(tn.config()), cni.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlugin_ReloadAndCachedDel changes the network's configuration
// between two pods: the second pod gets the new subnet, and StopPodSandbox
// of the first still tears down with the configuration it was added with.
func TestPlugin_ReloadAndCachedDel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	tn := newTestNet(t, "1.0.0", "198.18.102.0/24")
	p := newHandler(t, tn)

	pod1, _ := newPod(t, 1)
	n1, err := p.RunPodSandboxNetwork(ctx, pod1)
	if err != nil {
		t.Fatal(err)
	}
	tn.forceAddress = true
	tn.writeConflist(t, "10-nrinet-test.conflist", "198.18.103.0/24")
	pod2, _ := newPod(t, 2)
	n2, err := p.RunPodSandboxNetwork(ctx, pod2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n1.GetIps()[0], "198.18.102.") || !strings.HasPrefix(n2.GetIps()[0], "198.18.103.") {
		t.Fatalf("ips = %v, %v; want the old subnet, then the new one", n1.GetIps(), n2.GetIps())
	}

	// A broken configuration fails new pods and keeps the old one.
	bad := filepath.Join(tn.confDir, "00-broken.conflist")
	os.WriteFile(bad, []byte("{"), 0o644)
	pod3, _ := newPod(t, 3)
	_, err = p.RunPodSandboxNetwork(ctx, pod3)
	mustContain(t, err, "reloading", bad)
	if !errors.Is(err, cni.ErrInvalidNetworkConfig) {
		t.Errorf("error %v does not wrap ErrInvalidNetworkConfig", err)
	}
	os.Remove(bad)

	st, err := p.PodSandboxStatus(ctx, pod1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.GetIps(), n1.GetIps()) || st.GetInfo()[cni.InfoCheck] != "ok" {
		t.Errorf("status of pod1 = %v, want %v and check ok", st, n1.GetIps())
	}
	for _, pod := range []*api.PodSandbox{pod1, pod2} {
		if err := p.StopPodSandbox(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if got := tn.addressFiles(t); len(got) != 0 {
		t.Errorf("reservations left: %v", got)
	}
	if got := tn.bridgePorts(t); len(got) != 0 {
		t.Errorf("bridge ports left: %v", got)
	}
	if st, err := p.PodSandboxStatus(ctx, pod1, false); err != nil || st != nil {
		t.Errorf("status after stop = %v, %v; want nothing", st, err)
	}
}

// TestPlugin_SynchronizeGC joins with a pod the runtime no longer has:
// with cniVersion 1.1.0 its attachment is collected.
func TestPlugin_SynchronizeGC(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	tn := newTestNet(t, "1.1.0", "198.18.105.0/24")
	p := newHandler(t, tn)
	kept, _ := newPod(t, 1)
	gone, _ := newPod(t, 2)
	for _, pod := range []*api.PodSandbox{kept, gone} {
		if _, err := p.RunPodSandboxNetwork(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Synchronize(ctx, []*api.PodSandbox{kept}, nil); err != nil {
		t.Fatal(err)
	}
	if got := tn.addressFiles(t); len(got) != 1 {
		t.Errorf("reservations after GC = %v, want the kept pod's", got)
	}
	if st, _ := p.PodSandboxStatus(ctx, gone, false); st != nil {
		t.Errorf("collected pod still has a status: %v", st)
	}
	if st, _ := p.PodSandboxStatus(ctx, kept, false); st == nil {
		t.Error("kept pod lost its status")
	}
	if err := p.StopPodSandbox(ctx, kept); err != nil {
		t.Fatal(err)
	}
}

// TestPlugin_PodsWithoutNetNS needs no root: host-network pods are left
// alone, and a missing netns is a clear error.
func TestPlugin_PodsWithoutNetNS(t *testing.T) {
	ctx := context.Background()
	cfg := loaderEnv(t)
	testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
	p, err := cni.New(ctx, cni.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	host := &api.PodSandbox{Id: "hostpod", Name: "host", Namespace: "default"}
	if n, err := p.RunPodSandboxNetwork(ctx, host); n != nil || err != nil {
		t.Errorf("host-network RunPodSandboxNetwork = %v, %v", n, err)
	}
	if n, err := p.PodSandboxStatus(ctx, host, true); n != nil || err != nil {
		t.Errorf("host-network PodSandboxStatus = %v, %v", n, err)
	}
	if err := p.StopPodSandbox(ctx, host); err != nil {
		t.Errorf("host-network StopPodSandbox: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nrcni-missing")
	pod := &api.PodSandbox{Id: "p1", Name: "p1", Namespace: "default", Linux: &api.LinuxPodSandbox{
		Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: missing}}}}
	_, err = p.RunPodSandboxNetwork(ctx, pod)
	mustContain(t, err, "network namespace "+missing+" does not exist", "default/p1")
}
