package cri_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// sandboxInfo is the part of the verbose info the tests read.
type sandboxInfo struct {
	NetNS       string `json:"netns"`
	HostNetwork bool   `json:"hostNetwork"`
	IPs         []struct {
		IP, Owner string
	} `json:"ips"`
	Interfaces []struct {
		Name, Owner string
		Addresses   []string
	} `json:"interfaces"`
	Routes []struct {
		Destination, Gateway, Owner string
	} `json:"routes"`
	Info   map[string]string `json:"info"`
	Stale  map[string]string `json:"stale"`
	Owners map[string]string `json:"owners"`
}

func verboseInfo(t *testing.T, rsp *criapi.PodSandboxStatusResponse) sandboxInfo {
	t.Helper()
	if len(rsp.GetInfo()) != 1 || rsp.GetInfo()["info"] == "" {
		t.Fatalf("verbose info = %v, want one key, info", rsp.GetInfo())
	}
	var info sandboxInfo
	if err := json.Unmarshal([]byte(rsp.GetInfo()["info"]), &info); err != nil {
		t.Fatalf("info is not a JSON object: %v\n%s", err, rsp.GetInfo()["info"])
	}
	return info
}

func podAddrs(t *testing.T, ns string) []string { return testutil.PodAddrs(t, ns) }

// checkDualStack fails unless addrs is one address of each test subnet,
// IPv4 first.
func checkDualStack(t *testing.T, addrs []string) {
	t.Helper()
	if len(addrs) != 2 || !testV4.Contains(netip.MustParseAddr(addrs[0])) || !testV6.Contains(netip.MustParseAddr(addrs[1])) {
		t.Fatalf("addresses = %v, want one of %s, then one of %s", addrs, testV4, testV6)
	}
}

func TestSandbox_Lifecycle(t *testing.T) {
	e := newEnv(t, envConfig{podnet: true, required: []string{"podnet"}})
	ctx := context.Background()
	cfg := podConfig(1, false)
	id := e.run(cfg)
	if len(id) != 64 {
		t.Fatalf("sandbox ID %q is not 64 hex digits", id)
	}
	ns := "nrinet-" + id[:12]

	// Visible, READY, with the configuration echoed.
	if got := e.list(nil); !slices.Equal(got, []string{id}) {
		t.Fatalf("ListPodSandbox = %v, want [%s]", got, id)
	}
	st := e.status(id, false).GetStatus()
	if st.GetState() != criapi.PodSandboxState_SANDBOX_READY || st.GetCreatedAt() <= 0 ||
		st.GetMetadata().GetName() != "web-1" || st.GetMetadata().GetUid() != cfg.Metadata.Uid || st.GetMetadata().GetAttempt() != 1 ||
		!maps.Equal(st.GetLabels(), cfg.Labels) || !maps.Equal(st.GetAnnotations(), cfg.Annotations) {
		t.Errorf("status = %v", st)
	}
	if o := st.GetLinux().GetNamespaces().GetOptions(); o.GetNetwork() != criapi.NamespaceMode_POD || o.GetPid() != criapi.NamespaceMode_CONTAINER {
		t.Errorf("namespace options = %v, want the configuration's", o)
	}

	// The plugin's addresses are reported and are what the kernel has.
	addrs := ips(st)
	checkDualStack(t, addrs)
	if got := podAddrs(t, ns); !slices.Equal(got, slices.Sorted(slices.Values(addrs))) {
		t.Errorf("eth0 in %s has %v, status reports %v", ns, got, addrs)
	}
	if err := testutil.Ping(ns, "198.18.210.1"); err != nil {
		t.Error(err)
	}

	// Verbose: one key, the network with owners.
	info := verboseInfo(t, e.status(id, true))
	if info.NetNS != netnsPath(id) || info.HostNetwork || len(info.IPs) != 2 || info.IPs[0].IP != addrs[0] ||
		info.IPs[0].Owner != "10-podnet" || info.IPs[1].Owner != "10-podnet" {
		t.Errorf("info = %+v", info)
	}
	if len(info.Interfaces) != 1 || info.Interfaces[0].Name != "eth0" || info.Interfaces[0].Owner != "10-podnet" ||
		len(info.Routes) == 0 || info.Routes[0].Owner != "10-podnet" || info.Owners["ips/ipv4"] != "10-podnet" ||
		info.Info[podnet.InfoCheck] != "ok" || len(info.Stale) != 0 {
		t.Errorf("info = %+v", info)
	}

	// One sandbox per configuration.
	_, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfg})
	wantCode(t, err, codes.AlreadyExists, "second RunPodSandbox with the same configuration")

	// Filters: a crictl short ID, state, labels.
	for _, tc := range []struct {
		name string
		f    *criapi.PodSandboxFilter
		want []string
	}{
		{"short id", &criapi.PodSandboxFilter{Id: id[:13]}, []string{id}},
		{"unknown id", &criapi.PodSandboxFilter{Id: "ffff" + id}, nil},
		{"ready", &criapi.PodSandboxFilter{State: &criapi.PodSandboxStateValue{State: criapi.PodSandboxState_SANDBOX_READY}}, []string{id}},
		{"not ready", &criapi.PodSandboxFilter{State: &criapi.PodSandboxStateValue{State: criapi.PodSandboxState_SANDBOX_NOTREADY}}, nil},
		{"labels", &criapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "web", "index": "1"}}, []string{id}},
		{"other label", &criapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "db"}}, nil},
	} {
		if got := e.list(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("ListPodSandbox(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := e.metric("nrinet_nrinetd_nri_hook_duration_seconds", map[string]string{"event": "RunPodSandbox"}); n != 1 {
		t.Errorf("RunPodSandbox hook observed %v times, want 1", n)
	}
	if n := e.metric("nrinet_nrinetd_pod_sandboxes", map[string]string{"state": "READY"}); n != 1 {
		t.Errorf("READY sandboxes metric = %v, want 1", n)
	}

	// Stop, by short ID: NOTREADY, no address, namespace and veth gone.
	e.stopPod(id[:13])
	st = e.status(id, false).GetStatus()
	if st.GetState() != criapi.PodSandboxState_SANDBOX_NOTREADY || st.GetNetwork() == nil || len(ips(st)) != 0 {
		t.Errorf("after stop: state %v, network %v; want NOTREADY and no address", st.GetState(), st.GetNetwork())
	}
	if exists(netnsPath(id)) {
		t.Errorf("network namespace %s still exists after stop", netnsPath(id))
	}
	testutil.WaitFor(t, "the pod's veth to go", 5*time.Second, func() bool { return len(e.bridgePorts()) == 0 })
	e.stopPod(id)

	// Remove: gone, twice.
	e.removePod(id)
	if got := e.list(nil); len(got) != 0 {
		t.Errorf("ListPodSandbox after remove = %v", got)
	}
	_, err = e.client.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: id})
	wantCode(t, err, codes.NotFound, "PodSandboxStatus after remove")
	e.removePod(id)

	// The name is free again.
	id2 := e.run(cfg)
	if id2 == id {
		t.Fatal("same ID twice")
	}
	checkDualStack(t, ips(e.status(id2, false).GetStatus()))
	e.removePod(id2)

	// nri-podnet released every address.
	e.stop()
	if owners := e.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}

func TestSandbox_HostNetwork(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	id := e.run(podConfig(1, true))
	rsp := e.status(id, true)
	st := rsp.GetStatus()
	if st.GetState() != criapi.PodSandboxState_SANDBOX_READY || st.GetNetwork() == nil || len(ips(st)) != 0 ||
		st.GetLinux().GetNamespaces().GetOptions().GetNetwork() != criapi.NamespaceMode_NODE {
		t.Errorf("status = %v, want READY, no address, network NODE", st)
	}
	if info := verboseInfo(t, rsp); !info.HostNetwork || info.NetNS != "" {
		t.Errorf("info = %+v", info)
	}
	if exists(netnsPath(id)) {
		t.Errorf("a network namespace was created for a host-network sandbox")
	}
	if rec, err := e.store.PodNetwork(ctx, id); rec != nil || err != nil {
		t.Errorf("PodNetwork = %v, %v; want nil for host network", rec, err)
	}
	e.stopPod(id)
	if st := e.status(id, false).GetStatus(); st.GetState() != criapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("state after stop = %v", st.GetState())
	}
	e.removePod(id)
}

func TestRunPodSandbox_InvisibleWhileHookRuns(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := &counter{Hold: make(chan struct{}), Entered: make(chan string, 1)}
	e.startCounter(c)
	done := make(chan string, 1)
	go func() {
		rsp, err := e.client.RunPodSandbox(context.Background(), &criapi.RunPodSandboxRequest{Config: podConfig(1, true)})
		if err != nil {
			t.Error(err)
		}
		done <- rsp.GetPodSandboxId()
	}()
	id := <-c.Entered
	if got := e.list(nil); len(got) != 0 {
		t.Errorf("ListPodSandbox while the hook runs = %v, want nothing", got)
	}
	_, err := e.client.PodSandboxStatus(context.Background(), &criapi.PodSandboxStatusRequest{PodSandboxId: id})
	wantCode(t, err, codes.NotFound, "PodSandboxStatus while the hook runs")
	close(c.Hold)
	if got := <-done; got != id {
		t.Fatalf("RunPodSandbox returned %q, the hook saw %q", got, id)
	}
	if got := e.list(nil); !slices.Equal(got, []string{id}) {
		t.Errorf("ListPodSandbox after the hook = %v", got)
	}
}
