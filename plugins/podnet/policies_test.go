package podnet_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nrinet/nrinet/api"
	nrtest "github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

// TestPodnet_Policies wires the NetworkPolicy engine (a real Controller on
// a fake API, a real Enforcer in a network namespace standing for the
// node) into the plugin: when RunPodSandboxNetwork returns, the pod's
// policy is in the table; at StopPodSandbox its rules go; with the engine
// not running, the pod fails and leaves no address and no veth.
func TestPodnet_Policies(t *testing.T) {
	nrtest.SkipUnlessRoot(t)
	node, err := os.Open(nrtest.NewNetNS(t, "nrpp"+randHex(4)))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	enf, err := netpol.New(netpol.WithNetNS(int(node.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "deny-web"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
	)
	ctl, err := policies.New(client, "n1", enf)
	if err != nil {
		t.Fatal(err)
	}
	x := 1 + int(randHex(1)[0])%90
	cfg := podnet.Config{Bridge: "nrpp" + randHex(4), Subnets: []string{fmt.Sprintf("198.18.%d.0/24", x), fmt.Sprintf("fd00:198:18:%x::/64", x)}, MTU: 1500, StateDir: filepath.Join(t.TempDir(), "state")}
	t.Cleanup(func() { deleteBridge(cfg.Bridge) })
	p, err := podnet.New(context.Background(), podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithPolicies(ctl))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pfx := "nrpp" + randHex(3)
	pod := func(i int) *api.PodSandbox {
		return &api.PodSandbox{
			Id: fmt.Sprintf("pod-%s-%d", pfx, i), Name: fmt.Sprint("web-", i), Namespace: "default", Uid: fmt.Sprint("uid-", i),
			Labels: map[string]string{"app": "web"},
			Linux:  &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: nrtest.NewNetNS(t, fmt.Sprintf("%s-%d", pfx, i))}}},
		}
	}
	rules := func(name string) string {
		rs, err := enf.Rules()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			if strings.Contains(r.Comment, "pod=default/"+name+" ") {
				out = append(out, r.Comment)
			}
		}
		return strings.Join(out, "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The engine not running: the pod fails and leaves nothing.
	p0 := pod(0)
	if _, err := p.RunPodSandboxNetwork(ctx, p0); err == nil || !strings.Contains(err.Error(), "not running") || !strings.Contains(err.Error(), "default/web-0") {
		t.Errorf("RunPodSandboxNetwork with the engine not running = %v; want an error naming the pod and saying why", err)
	}
	if owners, err := p.Allocations(); err != nil || len(owners) != 0 {
		t.Errorf("after the failed setup: allocations %v, %v; want none", owners, err)
	}
	nrtest.WaitFor(t, "the failed pod's veth to go", 10*time.Second, func() bool {
		return !strings.Contains(nrtest.Run(t, "ip", "link", "show", "master", cfg.Bridge), "@")
	})

	runCtx, stopRun := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ctl.Run(runCtx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { stopRun(); wg.Wait() }()
	if err := ctl.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	p1 := pod(1)
	if _, err := p.RunPodSandboxNetwork(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if got := rules("web-1"); !strings.Contains(got, "denied (policies default/deny-web)") {
		t.Errorf("when RunPodSandboxNetwork returned, the table's rules for default/web-1: %q; want its default deny", got)
	}
	// Its IPv6 link-local address, as eth0 has it, leads to its chain too.
	out := nrtest.Run(t, "ip", "-n", fmt.Sprintf("%s-%d", pfx, 1), "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link")
	f := strings.Fields(out)
	if len(f) < 4 {
		t.Fatalf("eth0's link-local address: %q", out)
	}
	ll := netip.MustParsePrefix(f[3]).Addr()
	c, err := nftables.New(nftables.WithNetNSFd(int(node.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.GetSetByName(&nftables.Table{Name: netpol.TableName, Family: nftables.TableFamilyINet}, "ingress-v6")
	if err != nil {
		t.Fatal(err)
	}
	elems, err := c.GetSetElements(m)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range elems {
		if a, ok := netip.AddrFromSlice(e.Key); ok && a == ll {
			found = true
		}
	}
	if !found {
		t.Errorf("eth0's link-local address %s is not in the ingress map %v", ll, elems)
	}
	if err := p.StopPodSandbox(ctx, p1); err != nil {
		t.Fatal(err)
	}
	nrtest.WaitFor(t, "default/web-1's rules to go after StopPodSandbox", 10*time.Second, func() bool { return rules("web-1") == "" })
}
