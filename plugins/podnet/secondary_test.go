package podnet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/api"
	nrtest "github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// claims is the test's source of secondary networks: requests by pod UID,
// and what the plugin reported.
type claims struct {
	reqs map[string][]multinet.Request

	mu       sync.Mutex
	attached map[string][]multinet.Interface
	failed   map[string]error
	detached map[string][]multinet.Interface
}

var _ podnet.Secondary = (*claims)(nil)

func (c *claims) Requests(_ context.Context, pod multinet.Pod) ([]multinet.Request, error) {
	return slices.Clone(c.reqs[pod.UID]), nil
}

func (c *claims) Attached(_ context.Context, uid string, _ []multinet.Request, itfs []multinet.Interface, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attached[uid], c.failed[uid] = itfs, err
}

func (c *claims) Detached(_ context.Context, uid string, itfs []multinet.Interface) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detached[uid] = itfs
}

// nri-podnet with secondary networks: a pod gets net1 (a bridge network)
// and net2 (a host interface moved in) after eth0, in its network result
// and its status; they go at StopPodSandbox, and at Synchronize for a pod
// that is gone; a pod whose secondary network cannot be had fails and
// keeps nothing, eth0 included; a pod on the host network that asks for
// one fails.
func TestPodnet_SecondaryNetworks(t *testing.T) {
	nrtest.SkipUnlessRoot(t)
	tag := randHex(3)
	host := "nrps-h-" + tag
	hostPath := nrtest.NewNetNS(t, host)
	wire := "nrps-w-" + tag
	nrtest.NewNetNS(t, wire)
	nrtest.Run(t, "ip", "-n", host, "link", "add", "hostnic0", "type", "veth", "peer", "name", "wnic0", "netns", wire)
	mn, err := multinet.New(multinet.Config{StateDir: filepath.Join(t.TempDir(), "multinet"), Networks: []multinet.Network{
		{Name: "blue", Kind: multinet.KindBridge, Bridge: "mnbr0", Subnets: []string{"198.18.200.0/24"}},
		{Name: "nic", Kind: multinet.KindHost, Interface: "hostnic0"},
	}}, multinet.WithHostNetNS(hostPath), multinet.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	src := &claims{
		reqs: map[string][]multinet.Request{
			"uid-1": {{Claim: "default/c1", Network: "blue"}, {Claim: "default/c2", Network: "nic"}},
			"uid-2": {{Claim: "default/c3", Network: "blue"}, {Claim: "default/c4", Network: "red"}},
			"uid-3": {{Claim: "default/c5", Network: "blue"}},
		},
		attached: map[string][]multinet.Interface{}, failed: map[string]error{}, detached: map[string][]multinet.Interface{},
	}
	x := 1 + int(randHex(1)[0])%90
	cfg := podnet.Config{Bridge: "nrps" + tag, Subnets: []string{fmt.Sprintf("198.18.%d.0/24", x)}, MTU: 1500, StateDir: filepath.Join(t.TempDir(), "state")}
	t.Cleanup(func() { deleteBridge(cfg.Bridge) })
	reg := prometheus.NewRegistry()
	m, err := podnet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := podnet.New(context.Background(), podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithSecondary(mn, src), podnet.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pod := func(i int, hostNetwork bool) (*api.PodSandbox, string) {
		ps := &api.PodSandbox{Id: fmt.Sprintf("pod-%s-%d", tag, i), Name: fmt.Sprint("p", i), Namespace: "default", Uid: fmt.Sprint("uid-", i)}
		if hostNetwork {
			return ps, ""
		}
		name := fmt.Sprintf("nrps-%s-%d", tag, i)
		ps.Linux = &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: nrtest.NewNetNS(t, name)}}}
		return ps, name
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := func(n *api.PodSandboxNetwork) []string {
		var out []string
		for _, itf := range n.GetInterfaces() {
			out = append(out, itf.GetName())
		}
		return out
	}

	p1, ns1 := pod(1, false)
	n, err := p.RunPodSandboxNetwork(ctx, p1)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(n); !slices.Equal(got, []string{"eth0", "net1", "net2"}) {
		t.Errorf("interfaces %v; want eth0, net1, net2", got)
	}
	if len(n.GetIps()) != 1 || !strings.HasPrefix(n.GetIps()[0], fmt.Sprintf("198.18.%d.", x)) {
		t.Errorf("pod IPs %v; want eth0's only", n.GetIps())
	}
	if got := n.GetInfo()[podnet.InfoSecondary]; got != "net1=blue,net2=nic" {
		t.Errorf("info %s = %q", podnet.InfoSecondary, got)
	}
	net1 := n.GetInterfaces()[1]
	if len(net1.GetAddresses()) != 1 || !strings.HasPrefix(net1.GetAddresses()[0], "198.18.200.") || net1.GetMac() == "" {
		t.Errorf("net1 = %v; want a MAC and an address of 198.18.200.0/24", net1)
	}
	out := nrtest.Run(t, "ip", "-n", ns1, "-o", "addr", "show", "dev", "net1")
	if !strings.Contains(out, net1.GetAddresses()[0]) {
		t.Errorf("net1 in the pod: %s; want %s", out, net1.GetAddresses()[0])
	}
	nrtest.Run(t, "ip", "-n", ns1, "link", "show", "dev", "net2")
	// Port security's counters: net1 (a bridge network's) under the pod's
	// name beside eth0, every reason from 0; net2 (a host interface) has
	// none.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "nrinet_podnet_portsec_drops_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			series[l["pod"]+" "+l["interface"]+" "+l["reason"]] = mt.GetCounter().GetValue()
		}
	}
	for _, k := range []string{"default/p1 eth0 mac", "default/p1 net1 mac", "default/p1 net1 ipv4-source", "default/p1 net1 router"} {
		if v, ok := series[k]; !ok || v != 0 {
			t.Errorf("nrinet_podnet_portsec_drops_total{pod, interface, reason} %q: %v, %v; want 0", k, v, ok)
		}
	}
	for k := range series {
		if strings.Contains(k, " net2 ") {
			t.Errorf("a host interface has port security counters: %q", k)
		}
	}
	src.mu.Lock()
	if got := src.attached["uid-1"]; len(got) != 2 || src.failed["uid-1"] != nil {
		t.Errorf("Attached(uid-1) = %v, %v; want two interfaces", got, src.failed["uid-1"])
	}
	src.mu.Unlock()
	st, err := p.PodSandboxStatus(ctx, p1, false)
	if err != nil || !slices.Equal(names(st), []string{"eth0", "net1", "net2"}) {
		t.Errorf("status: interfaces %v, %v; want eth0, net1, net2", names(st), err)
	}

	// An unknown network: the pod fails, naming the claim, and keeps
	// nothing (its eth0 address is released too).
	p2, ns2 := pod(2, false)
	if _, err := p.RunPodSandboxNetwork(ctx, p2); !errors.Is(err, multinet.ErrUnknownNetwork) || !strings.Contains(err.Error(), "default/c4") || !strings.Contains(err.Error(), "default/p2") {
		t.Errorf("pod with an unknown network: %v; want an error naming the pod, the claim and the network", err)
	}
	if owners, _ := p.Allocations(); slices.Contains(owners, p2.GetId()) {
		t.Errorf("the failed pod holds addresses: %v", owners)
	}
	if out := nrtest.Run(t, "ip", "-n", ns2, "-o", "link", "show"); strings.Contains(out, "net1") {
		t.Errorf("the failed pod has net1: %s", out)
	}
	src.mu.Lock()
	if !errors.Is(src.failed["uid-2"], multinet.ErrUnknownNetwork) {
		t.Errorf("Attached(uid-2) error %v; want the unknown network", src.failed["uid-2"])
	}
	src.mu.Unlock()

	// A pod on the host network cannot have one.
	p3, _ := pod(3, true)
	if _, err := p.RunPodSandboxNetwork(ctx, p3); !errors.Is(err, multinet.ErrHostNetwork) || !strings.Contains(err.Error(), "default/c5") {
		t.Errorf("host network pod with a claim: %v; want ErrHostNetwork naming the claim", err)
	}

	// StopPodSandbox takes them away; the host interface is back.
	if err := p.StopPodSandbox(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if out := nrtest.Run(t, "ip", "-n", ns1, "-o", "link", "show"); strings.Contains(out, "net1") || strings.Contains(out, "net2") {
		t.Errorf("after StopPodSandbox the pod has: %s", out)
	}
	nrtest.Run(t, "ip", "-n", host, "link", "show", "dev", "hostnic0")
	src.mu.Lock()
	if got := src.detached["uid-1"]; len(got) != 2 {
		t.Errorf("Detached(uid-1) = %v; want two interfaces", got)
	}
	src.mu.Unlock()

	// A pod gone while the plugin was away: Synchronize detaches its
	// interfaces.
	p1b, _ := pod(4, false)
	p1b.Uid = "uid-1"
	if _, err := p.RunPodSandboxNetwork(ctx, p1b); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Synchronize(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if itfs, err := mn.Interfaces(p1b.GetId()); err != nil || len(itfs) != 0 {
		t.Errorf("after Synchronize without the pod: %v, %v; want no interfaces", itfs, err)
	}
	nrtest.Run(t, "ip", "-n", host, "link", "show", "dev", "hostnic0")
}
