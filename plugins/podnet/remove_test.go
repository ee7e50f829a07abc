package podnet_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	nrtest "github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// A pod stopped while the plugin was away (the runtime removed its
// network namespace; no StopPodSandbox reached the plugin) and still
// listed when the plugin joined again keeps its addresses and secondary
// interface through Synchronize; RemovePodSandbox gives them back. A pod
// stopped as usual holds nothing by then, and its RemovePodSandbox does
// nothing.
func TestPodnet_RemovePodSandboxAfterMissedStop(t *testing.T) {
	nrtest.SkipUnlessRoot(t)
	tag := randHex(3)
	hostPath := nrtest.NewNetNS(t, "nrpr-h-"+tag)
	mn, err := multinet.New(multinet.Config{StateDir: filepath.Join(t.TempDir(), "multinet"), Networks: []multinet.Network{
		{Name: "blue", Kind: multinet.KindBridge, Bridge: "mnbr0", Subnets: []string{"198.18.201.0/24"}},
	}}, multinet.WithHostNetNS(hostPath), multinet.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	src := &claims{
		reqs: map[string][]multinet.Request{
			"uid-1": {{Claim: "default/c1", Network: "blue"}},
			"uid-2": {{Claim: "default/c2", Network: "blue"}},
		},
		attached: map[string][]multinet.Interface{}, failed: map[string]error{}, detached: map[string][]multinet.Interface{},
	}
	x := 1 + int(randHex(1)[0])%90
	cfg := podnet.Config{Bridge: "nrpr" + tag, Subnets: []string{fmt.Sprintf("198.18.%d.0/24", x)}, MTU: 1500, StateDir: filepath.Join(t.TempDir(), "state")}
	t.Cleanup(func() { deleteBridge(cfg.Bridge) })
	p, err := podnet.New(context.Background(), podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithSecondary(mn, src))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := make([]*api.PodSandbox, 2)
	names := make([]string, 2)
	for i := range pods {
		names[i] = fmt.Sprintf("nrpr-%s-%d", tag, i+1)
		pods[i] = &api.PodSandbox{Id: fmt.Sprintf("pod-%s-%d", tag, i+1), Name: fmt.Sprint("p", i+1), Namespace: "default", Uid: fmt.Sprint("uid-", i+1),
			Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: nrtest.NewNetNS(t, names[i])}}}}
		if _, err := p.RunPodSandboxNetwork(ctx, pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	holds := func(what string, pod *api.PodSandbox, want bool) {
		t.Helper()
		owners, err := p.Allocations()
		if err != nil {
			t.Fatal(err)
		}
		itfs, err := mn.Interfaces(pod.GetId())
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(owners, pod.GetId()); got != want || (len(itfs) == 1) != want {
			t.Errorf("%s: pod %s holds addresses %v, secondary interfaces %v; want held %v", what, pod.GetName(), got, itfs, want)
		}
	}

	// Pod 1 stops as usual; pod 2 is stopped while the plugin is away:
	// only its namespace goes.
	if err := p.StopPodSandbox(ctx, pods[0]); err != nil {
		t.Fatal(err)
	}
	nrtest.DeleteNetNS(names[1])
	if _, err := p.Synchronize(ctx, pods, nil); err != nil {
		t.Fatal(err)
	}
	holds("after Synchronize listing both", pods[0], false)
	holds("after Synchronize listing both", pods[1], true)

	for _, pod := range pods {
		if err := p.RemovePodSandbox(ctx, pod); err != nil {
			t.Fatal(err)
		}
		holds("after RemovePodSandbox", pod, false)
	}
	src.mu.Lock()
	if got := src.detached["uid-2"]; len(got) != 1 || got[0].Network != "blue" {
		t.Errorf("Detached(uid-2) = %v; want its blue interface", got)
	}
	src.mu.Unlock()
	if out := nrtest.Run(t, "ip", "-n", "nrpr-h-"+tag, "-o", "link", "show", "master", "mnbr0"); strings.TrimSpace(out) != "" {
		t.Errorf("bridge mnbr0 still has ports:\n%s", out)
	}
}
