package dra_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/dra"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// From a prepared claim to the pod's interface and back: nri-podnet with
// the driver as its source of secondary networks gives the pod net1
// (bridge network) and net2 (a host interface) at RunPodSandbox, and the
// claims' status says so with the interfaces' real names, MACs and
// addresses; a second pod whose claim asks for the taken host interface
// fails and its claim says why; StopPodSandbox empties the status.
func TestDriver_withPodnet(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	b := make([]byte, 3)
	rand.Read(b)
	tag := hex.EncodeToString(b)
	host := "nrdra-h-" + tag
	hostPath := testutil.NewNetNS(t, host)
	wire := "nrdra-w-" + tag
	testutil.NewNetNS(t, wire)
	testutil.Run(t, "ip", "-n", host, "link", "add", "eth2", "type", "veth", "peer", "name", "weth2", "netns", wire)
	dir := t.TempDir()
	nets := []multinet.Network{
		{Name: "blue", Kind: multinet.KindBridge, Bridge: "nrdrabr0", Subnets: []string{"198.18.210.0/24", "fd00:198:18:210::/64"}},
		{Name: "nic", Kind: multinet.KindHost, Interface: "eth2"},
	}
	mn, err := multinet.New(multinet.Config{StateDir: filepath.Join(dir, "multinet"), Networks: nets}, multinet.WithHostNetNS(hostPath), multinet.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	c1 := claim("c1", "node1", []string{"uid-p1"}, [2]string{"blue", "blue"}, [2]string{"nic", "nic"})
	c2 := claim("c2", "node1", []string{"uid-p2"}, [2]string{"nic", "nic"})
	cs := newClientset(t, c1, c2)
	d, err := dra.New(dra.Config{Client: cs, NodeName: "node1", StateDir: filepath.Join(dir, "dra"), Networks: mn.Networks()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c1, c2}); err != nil || res[c1.UID].Err != nil || res[c2.UID].Err != nil {
		t.Fatalf("prepare: %v, %v", res, err)
	}

	cfg := podnet.Config{Bridge: "nrdra" + tag, Subnets: []string{"198.18.211.0/24"}, MTU: 1500, StateDir: filepath.Join(dir, "podnet")}
	t.Cleanup(func() {
		testutil.DeleteLink(cfg.Bridge)
		if g, err := portsec.New(cfg.Bridge, podnet.HostVethPrefix); err == nil {
			g.Uninstall()
		}
	})
	p, err := podnet.New(ctx, podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithSecondary(mn, d))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pod := func(i int) (*api.PodSandbox, string) {
		ns := fmt.Sprintf("nrdra-%s-%d", tag, i)
		return &api.PodSandbox{
			Id: fmt.Sprintf("sandbox-%s-%d", tag, i), Name: fmt.Sprint("p", i), Namespace: "ns1", Uid: fmt.Sprint("uid-p", i),
			Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: testutil.NewNetNS(t, ns)}}},
		}, ns
	}
	status := func(name string) []resourceapi.AllocatedDeviceStatus {
		d.WaitStatus()
		got, err := cs.ResourceV1().ResourceClaims("ns1").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Devices
	}

	p1, ns1 := pod(1)
	n, err := p.RunPodSandboxNetwork(ctx, p1)
	if err != nil {
		t.Fatal(err)
	}
	devs := status("c1")
	if len(devs) != 2 {
		t.Fatalf("c1's status.devices %+v; want blue and nic", devs)
	}
	for _, s := range devs {
		nd := s.NetworkData
		if nd == nil || len(s.Conditions) != 1 || s.Conditions[0].Status != metav1.ConditionTrue {
			t.Errorf("device %s: %+v", s.Device, s)
			continue
		}
		// What the status says is what the pod has.
		out := testutil.Run(t, "ip", "-n", ns1, "-o", "link", "show", "dev", nd.InterfaceName)
		if !strings.Contains(out, nd.HardwareAddress) {
			t.Errorf("device %s: %s in the pod is %s; the status says MAC %s", s.Device, nd.InterfaceName, out, nd.HardwareAddress)
		}
		addrs := testutil.Run(t, "ip", "-n", ns1, "-o", "addr", "show", "dev", nd.InterfaceName, "scope", "global")
		for _, ip := range nd.IPs {
			if !strings.Contains(addrs, ip) {
				t.Errorf("device %s: %s in the pod has %s; the status says %v", s.Device, nd.InterfaceName, addrs, nd.IPs)
			}
		}
		if want := map[string]string{"blue": "net1", "nic": "net2"}[s.Device]; nd.InterfaceName != want || (s.Device == "blue") != (len(nd.IPs) == 2) {
			t.Errorf("device %s: networkData %+v; want %s (with both addresses for blue)", s.Device, nd, want)
		}
	}
	if len(n.GetInterfaces()) != 3 {
		t.Errorf("pod network interfaces %v; want eth0, net1, net2", n.GetInterfaces())
	}

	// The host interface is p1's: p2's claim of it fails, and says why.
	p2, _ := pod(2)
	if _, err := p.RunPodSandboxNetwork(ctx, p2); err == nil || !strings.Contains(err.Error(), "ns1/c2") {
		t.Errorf("p2 with the taken host interface: %v; want an error naming claim ns1/c2", err)
	}
	devs = status("c2")
	if len(devs) != 1 || len(devs[0].Conditions) != 1 || devs[0].Conditions[0].Status != metav1.ConditionFalse ||
		!strings.Contains(devs[0].Conditions[0].Message, `host interface "eth2" is taken by `+p1.GetId()) {
		t.Errorf("c2's status %+v; want Ready False saying eth2 is p1's", devs)
	}

	// nri-podnet restarted (its manager, driver and plugin made anew from
	// the state directories) with p1 running: Synchronize keeps p1's
	// interfaces and addresses, and the new plugin can stop it.
	before := testutil.Run(t, "ip", "-n", ns1, "-o", "addr", "show", "scope", "global")
	p.Close()
	mn.Close()
	if mn, err = multinet.New(multinet.Config{StateDir: filepath.Join(dir, "multinet"), Networks: nets}, multinet.WithHostNetNS(hostPath), multinet.WithNoSync()); err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	d.Stop()
	if d, err = dra.New(dra.Config{Client: cs, NodeName: "node1", StateDir: filepath.Join(dir, "dra"), Networks: mn.Networks()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	if p, err = podnet.New(ctx, podnet.WithConfig(cfg), podnet.WithLogger(slog.New(slog.DiscardHandler)), podnet.WithSecondary(mn, d)); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Synchronize(ctx, []*api.PodSandbox{p1}, nil); err != nil {
		t.Fatal(err)
	}
	if after := testutil.Run(t, "ip", "-n", ns1, "-o", "addr", "show", "scope", "global"); after != before {
		t.Errorf("p1's addresses after the restart:\n%s\nbefore:\n%s", after, before)
	}
	if st, err := p.PodSandboxStatus(ctx, p1, false); err != nil || len(st.GetInterfaces()) != 3 {
		t.Errorf("p1's status after the restart: %v, %v; want eth0, net1, net2", st.GetInterfaces(), err)
	}

	if err := p.StopPodSandbox(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if devs := status("c1"); len(devs) != 0 {
		t.Errorf("c1's status after StopPodSandbox: %+v", devs)
	}
	testutil.Run(t, "ip", "-n", host, "link", "show", "dev", "eth2")
}
