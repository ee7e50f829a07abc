package cri_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// podLog is a plugin on the plugin library (so it has the pod network
// extension) that keeps the last pod of each event, by pod ID.
type podLog struct {
	mu   sync.Mutex
	pods map[string]*api.PodSandbox // "<event> <pod id>" → pod
}

func (l *podLog) put(ev string, pods ...*api.PodSandbox) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pods == nil {
		l.pods = map[string]*api.PodSandbox{}
	}
	for _, pod := range pods {
		l.pods[ev+" "+pod.GetId()] = pod
	}
}

func (l *podLog) get(ev, id string) *api.PodSandbox {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pods[ev+" "+id]
}

func (l *podLog) Synchronize(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	l.put("Synchronize", pods...)
	return nil, nil
}

func (l *podLog) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.put("RunPodSandbox", pod)
	return nil
}

func (l *podLog) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	l.put("StopPodSandbox", pod)
	return nil
}

// startPodLog connects l to the env's runtime as 30-podlog and waits until
// it has joined.
func (e *env) startPodLog(l *podLog) {
	e.t.Helper()
	s, err := plugin.New(l, plugin.WithPluginName("podlog"), plugin.WithPluginIdx("30"), plugin.WithSocketPath(e.nriSock))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Stop)
	rt := e.rt
	testutil.WaitFor(e.t, "30-podlog to join", 10*time.Second, func() bool { return rt.PluginConnected("30-podlog") })
}

// TestRunPodSandbox_PodConfigForNetworkPlugins: the port mappings, DNS
// configuration and cgroup parent of a sandbox's CRI configuration reach
// NRI plugins in RunPodSandbox, in Synchronize after nrinetd restarted
// (they are persisted), and in StopPodSandbox; a host-network pod has its
// cgroup parent too.
func TestRunPodSandbox_PodConfigForNetworkPlugins(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	e := newEnv(t, envConfig{})
	l := &podLog{}
	e.startPodLog(l)

	cfg := podConfig(1, false)
	cfg.Linux.CgroupParent = "/kubepods/besteffort/pod" + cfg.Metadata.Uid
	cfg.PortMappings = []*criapi.PortMapping{
		{Protocol: criapi.Protocol_TCP, ContainerPort: 80, HostPort: 18080},
		{Protocol: criapi.Protocol_UDP, ContainerPort: 53, HostPort: 18053, HostIp: "198.18.0.1"},
		{Protocol: criapi.Protocol_SCTP, ContainerPort: 9}, // declared only: the plugin decides
	}
	cfg.DnsConfig = &criapi.DNSConfig{Servers: []string{"198.18.0.53"}, Searches: []string{"default.svc.example.test", "example.test"}, Options: []string{"ndots:5"}}
	wantPorts := []*api.PortMapping{
		{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 80, HostPort: 18080},
		{Protocol: api.Protocol_PROTOCOL_UDP, ContainerPort: 53, HostPort: 18053, HostIp: "198.18.0.1"},
		{Protocol: api.Protocol_PROTOCOL_SCTP, ContainerPort: 9},
	}
	wantDNS := &api.PodDNSConfig{Servers: []string{"198.18.0.53"}, Searches: []string{"default.svc.example.test", "example.test"}, Options: []string{"ndots:5"}}
	id := e.run(cfg)
	hostCfg := podConfig(2, true)
	hostCfg.Linux.CgroupParent = "/kubepods/pod" + hostCfg.Metadata.Uid
	hostID := e.run(hostCfg)

	check := func(ev string) {
		t.Helper()
		pod := l.get(ev, id)
		if pod == nil {
			t.Fatalf("%s: plugin did not see pod %s", ev, id)
		}
		want := &api.PodSandbox{PortMappings: wantPorts, DnsConfig: wantDNS}
		if got := (&api.PodSandbox{PortMappings: pod.GetPortMappings(), DnsConfig: pod.GetDnsConfig()}); !proto.Equal(got, want) {
			t.Errorf("%s: ports %v, dns %v; want %v, %v", ev, got.GetPortMappings(), got.GetDnsConfig(), wantPorts, wantDNS)
		}
		if got := pod.GetLinux().GetCgroupParent(); got != cfg.Linux.CgroupParent {
			t.Errorf("%s: cgroup parent %q, want %q", ev, got, cfg.Linux.CgroupParent)
		}
		if pod.NetNSPath() == "" {
			t.Errorf("%s: pod has no network namespace", ev)
		}
		host := l.get(ev, hostID)
		if host == nil {
			t.Fatalf("%s: plugin did not see the host-network pod", ev)
		}
		if host.GetLinux().GetCgroupParent() != hostCfg.Linux.CgroupParent || host.NetNSPath() != "" || host.HasExtensionFields() {
			t.Errorf("%s: host-network pod = %v", ev, host)
		}
	}
	check("RunPodSandbox")
	e.restart()
	e.startPodLog(l)
	check("Synchronize")
	e.stopPod(id)
	e.stopPod(hostID)
	check("StopPodSandbox")
	e.removePod(id)
	e.removePod(hostID)
}
