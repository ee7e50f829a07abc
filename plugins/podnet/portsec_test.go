package podnet_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// acceptRA reads an interface's IPv6 accept_ra in a namespace ("" for the
// node's).
func acceptRA(t *testing.T, netns, iface string) string {
	t.Helper()
	if netns == "" {
		b, err := os.ReadFile(filepath.Join("/proc/sys/net/ipv6/conf", iface, "accept_ra"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return strings.TrimSpace(testutil.Run(t, "ip", "netns", "exec", netns, "cat", "/proc/sys/net/ipv6/conf/"+iface+"/accept_ra"))
}

// guardedPorts reads the port security table of the bridge back from the
// kernel: the host veths it has a chain for.
func guardedPorts(t *testing.T, bridge string) []string {
	t.Helper()
	g, err := portsec.New(bridge, podnet.HostVethPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := g.Read()
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// TestPodnet_PortSecurity: the real nri-podnet guards each pod's port
// from RunPodSandbox to StopPodSandbox, rebuilds the guard from the live
// pods after a restart, takes no router advertisements on the bridge,
// the host veths and the pods' eth0, and gives a pod without IPv6 no
// IPv6 on eth0.
func TestPodnet_PortSecurity(t *testing.T) {
	for _, dual := range []bool{true, false} {
		name := "ipv4"
		if dual {
			name = "dual-stack"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, dual)
			ctx := context.Background()
			var pods []*api.PodSandbox
			var nss []string
			for i := range 2 {
				pod, ns := e.pod(i)
				if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
					t.Fatalf("RunPodSandbox: %v\n%s", err, e.logs)
				}
				pods, nss = append(pods, pod), append(nss, ns)
			}
			want := []string{podnet.HostVethName(pods[0].Id), podnet.HostVethName(pods[1].Id)}
			slices.Sort(want)
			if got := guardedPorts(t, e.cfg.Bridge); !slices.Equal(got, want) {
				t.Errorf("guarded ports %v, want %v", got, want)
			}
			if got := acceptRA(t, "", e.cfg.Bridge); got != "0" {
				t.Errorf("bridge accept_ra = %s", got)
			}
			for i, pod := range pods {
				if got := acceptRA(t, "", podnet.HostVethName(pod.Id)); got != "0" {
					t.Errorf("host veth accept_ra = %s", got)
				}
				if got := acceptRA(t, nss[i], "eth0"); got != "0" {
					t.Errorf("eth0 accept_ra = %s", got)
				}
				v6 := testutil.Run(t, "ip", "-n", nss[i], "-6", "-o", "addr", "show", "dev", "eth0")
				if !dual && v6 != "" {
					t.Errorf("IPv4-only pod has IPv6 on eth0: %s", v6)
				}
				if dual && !strings.Contains(v6, "fe80::") {
					t.Errorf("dual-stack pod has no link-local address: %s", v6)
				}
			}
			for _, a := range podAddrs(t, nss[1]) {
				if err := testutil.Ping(nss[0], strings.Split(a, "/")[0]); err != nil {
					t.Errorf("pod 0 → pod 1: %v", err)
				}
			}

			// A restart: Synchronize rebuilds the guard of the live pods.
			e.stop()
			for _, g := range []string{e.cfg.Bridge} {
				gd, _ := portsec.New(g, podnet.HostVethPrefix)
				gd.Uninstall() // as if lost: the plugin must write it again
			}
			e.start(pods)
			if got := guardedPorts(t, e.cfg.Bridge); !slices.Equal(got, want) {
				t.Errorf("after the restart, guarded ports %v, want %v", got, want)
			}
			if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pods[0]}); err != nil {
				t.Fatal(err)
			}
			if got := guardedPorts(t, e.cfg.Bridge); !slices.Equal(got, []string{podnet.HostVethName(pods[1].Id)}) {
				t.Errorf("after StopPodSandbox of pod 0, guarded ports %v", got)
			}
			if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pods[1]}); err != nil {
				t.Fatal(err)
			}
			if got := guardedPorts(t, e.cfg.Bridge); len(got) != 0 {
				t.Errorf("after the last StopPodSandbox, guarded ports %v", got)
			}
		})
	}
}
