package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

func v4net(ip string) *api.PodSandboxNetwork {
	return &api.PodSandboxNetwork{Ips: []string{ip}}
}

func TestNetwork_ConflictNamesBothPlugins(t *testing.T) {
	e := newEnv(t)
	a := e.startNetPlugin(netScript{Name: "net-a", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	e.startNetPlugin(netScript{Name: "net-b", Idx: "20", Network: pj(v4net("198.18.0.6"))})
	pod := netPod(1)
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	var cerr *runtime.ConflictError
	if !errors.As(err, &cerr) || cerr.Plugin != "20-net-b" || cerr.Owner != "10-net-a" {
		t.Fatalf("error = %v, want a conflict between 20-net-b and 10-net-a", err)
	}
	for _, want := range []string{"198.18.0.6", "198.18.0.5", "IPv4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	// The plugin that had succeeded cleaned up.
	waitFor(t, "cleanup of net-a", func() bool {
		l := a.lines()
		return slices.Contains(l, "StopPodSandbox "+pod.Id) && slices.Contains(l, "RemovePodSandbox "+pod.Id)
	})
}

func TestNetwork_Aggregate(t *testing.T) {
	e := newEnv(t, runtime.WithNetworkConflictPolicy(runtime.ConflictAggregate))
	e.startNetPlugin(netScript{Name: "net-a", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	b := e.startNetPlugin(netScript{Name: "net-b", Idx: "20", Network: pj(&api.PodSandboxNetwork{Ips: []string{"198.18.0.6", "198.18.0.5"}})})
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.GetNetwork().GetIps(); !slices.Equal(got, []string{"198.18.0.5", "198.18.0.6"}) {
		t.Errorf("ips = %v, want the first plugin's, then the second's new one", got)
	}
	if got := rec.GetOwners()[api.OwnerIPv4]; got != "10-net-a,20-net-b" {
		t.Errorf("IPv4 owners = %q", got)
	}
	// The later plugin saw the earlier one's address.
	if l := b.lines(); len(l) == 0 || l[0] != "RunPodSandbox "+pod.Id+" ips=198.18.0.5" {
		t.Errorf("net-b saw %v, want the address net-a set", l)
	}
}

func TestNetwork_DualStackOrder(t *testing.T) {
	// One plugin, addresses in this order: IPv6, IPv4, IPv4.
	n := &api.PodSandboxNetwork{
		Ips: []string{"fd00:198:18::5"},
		Interfaces: []*api.NetworkInterface{{
			Name: "eth0", Addresses: []string{"198.18.0.5/24", "198.18.0.7/24", "fd00:198:18::7/64"},
		}},
	}
	for _, tc := range []struct {
		pref runtime.FamilyPreference
		want []string
	}{
		{runtime.PreferIPv4, []string{"198.18.0.5", "fd00:198:18::5", "198.18.0.7", "fd00:198:18::7"}},
		{runtime.PreferIPv6, []string{"fd00:198:18::5", "198.18.0.5", "198.18.0.7", "fd00:198:18::7"}},
		{runtime.PreferPluginOrder, []string{"fd00:198:18::5", "198.18.0.5", "198.18.0.7", "fd00:198:18::7"}},
	} {
		e := newEnv(t, runtime.WithFamilyPreference(tc.pref))
		e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(n)})
		rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.GetNetwork().GetIps(); !slices.Equal(got, tc.want) {
			t.Errorf("preference %d: ips = %v, want %v", tc.pref, got, tc.want)
		}
	}
}

func TestNetwork_InvalidResultsNamePluginAndValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  *api.PodSandboxNetwork
		want string
	}{
		{"address", v4net("198.18.0.500"), `"198.18.0.500"`},
		{"loopback", v4net("127.0.0.1"), `"127.0.0.1" is a loopback address`},
		{"MAC", &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Mac: "zz:zz"}}}, `MAC "zz:zz"`},
		{"route", &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: "0.0.0.0/0", Gateway: "fd00::1"}}}, `gateway "fd00::1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.startNetPlugin(netScript{Name: "liar", Idx: "10", Network: pj(tc.net)})
			_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
			var perr *runtime.PluginError
			if !errors.As(err, &perr) || perr.Plugin != "10-liar" || !errors.Is(err, api.ErrInvalidNetwork) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want an invalid-network error from 10-liar naming %s", err, tc.want)
			}
		})
	}
}

func TestNetwork_FailureCleansUpEarlierPlugins(t *testing.T) {
	e := newEnv(t)
	first := e.startNetPlugin(netScript{Name: "first", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	second := e.startNetPlugin(netScript{Name: "second", Idx: "20", FailRun: "out of addresses"})
	third := e.startNetPlugin(netScript{Name: "third", Idx: "30", Network: pj(v4net("fd00:198:18::5"))})
	pod := netPod(1)
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err == nil || !strings.Contains(err.Error(), `plugin "20-second": RunPodSandbox: out of addresses`) {
		t.Fatalf("error = %v", err)
	}
	want := []string{"RunPodSandbox " + pod.Id + " ips=", "StopPodSandbox " + pod.Id, "RemovePodSandbox " + pod.Id}
	if got := first.lines(); !slices.Equal(got, want) {
		t.Errorf("first plugin saw %v, want %v", got, want)
	}
	if got := second.lines(); len(got) != 1 {
		t.Errorf("failing plugin saw %v, want only its RunPodSandbox", got)
	}
	if got := third.lines(); len(got) != 0 {
		t.Errorf("plugin after the failure was called: %v", got)
	}
}

func TestNetwork_HostNetworkPodIgnoresAddresses(t *testing.T) {
	e := newEnv(t)
	e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := netPod(1)
	pod.Linux = nil // no network namespace: host network
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil || rec != nil {
		t.Fatalf("RunPodSandbox = %v, %v; want no network", rec, err)
	}
	if !strings.Contains(e.logs.String(), "host-network pod") {
		t.Errorf("no warning logged:\n%s", e.logs)
	}
}

func TestNetwork_StatusDeadlineKeepsStaleParts(t *testing.T) {
	const deadline = 200 * time.Millisecond
	e := newEnv(t, runtime.WithStatusTimeout(deadline))
	e.startNetPlugin(netScript{Name: "fast", Idx: "10", Network: pj(v4net("198.18.0.5")),
		StatusNetwork: pj(v4net("198.18.0.9"))})
	e.startNetPlugin(netScript{Name: "slow", Idx: "20", Network: pj(v4net("fd00:198:18::5")), StatusSleep: 5 * time.Second})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed > deadline+50*time.Millisecond {
		t.Errorf("status took %v, deadline %v", elapsed, deadline)
	}
	if got := rec.GetNetwork().GetIps(); !slices.Equal(got, []string{"198.18.0.9", "fd00:198:18::5"}) {
		t.Errorf("ips = %v: want the fast plugin's new address and the slow one's stored address", got)
	}
	if reason := rec.GetStale()["20-slow"]; !strings.Contains(reason, "no answer within 200ms") {
		t.Errorf("stale = %v, want 20-slow marked stale", rec.GetStale())
	}
	if _, ok := rec.GetStale()["10-fast"]; ok {
		t.Errorf("fast plugin marked stale: %v", rec.GetStale())
	}
}

func TestNetwork_KilledPluginIsStaleNotEmpty(t *testing.T) {
	e := newEnv(t)
	p := e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	p.kill()
	waitFor(t, "the killed plugin to be dropped", func() bool { return !e.joined("10-net") })
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.GetNetwork().GetIps(); !slices.Equal(got, []string{"198.18.0.5"}) {
		t.Errorf("ips = %v, want the stored address", got)
	}
	if rec.GetStale()["10-net"] != "plugin not connected" || rec.GetOwners()[api.OwnerIPv4] != "10-net" {
		t.Errorf("stale = %v, owners = %v", rec.GetStale(), rec.GetOwners())
	}
}

func TestNetwork_StatusCoalescedAndCached(t *testing.T) {
	e := newEnv(t, runtime.WithStatusCacheTTL(time.Minute))
	p := e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("198.18.0.5")), StatusSleep: 100 * time.Millisecond})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.rt.PodSandboxStatus(context.Background(), pod, last, false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	count := func() int {
		n := 0
		for _, l := range p.lines() {
			if strings.HasPrefix(l, "PodSandboxStatus") {
				n++
			}
		}
		return n
	}
	if n := count(); n != 1 {
		t.Errorf("8 concurrent status calls made %d plugin calls, want 1", n)
	}
	if _, err := e.rt.PodSandboxStatus(context.Background(), pod, last, false); err != nil || count() != 1 {
		t.Errorf("cached status asked the plugin again (%d calls, %v)", count(), err)
	}
	if _, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true); err != nil || count() != 2 {
		t.Errorf("verbose status was served from the cache (%d calls, %v)", count(), err)
	}
}

func TestNetwork_RequiredPlugin(t *testing.T) {
	e := newEnv(t, runtime.WithRequiredNetworkPlugins("podnet"))
	if ready, why := e.rt.NetworkReady(); ready || !strings.Contains(why, `"podnet"`) {
		t.Fatalf("NetworkReady = %v, %q; want false naming podnet", ready, why)
	}
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
	if err == nil || !strings.Contains(err.Error(), `required network plugin "podnet" not connected`) {
		t.Fatalf("RunPodSandbox = %v, want a fail-closed error", err)
	}
	hostPod := netPod(2)
	hostPod.Linux = nil
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: hostPod}); err != nil {
		t.Fatalf("host-network pod refused: %v", err)
	}
	e.startNetPlugin(netScript{Name: "podnet", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	if ready, why := e.rt.NetworkReady(); !ready {
		t.Fatalf("NetworkReady = false (%s) with the plugin connected", why)
	}
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)}); err != nil {
		t.Fatal(err)
	}
}

func TestNetwork_UpdatePodSandboxNetwork(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	p := e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("198.18.0.5")),
		UpdateAfterRun: pj(&api.PodSandboxNetwork{Ips: []string{"198.18.0.8"}, Info: map[string]string{"why": "renumbered"}})})
	pod := netPod(1)
	store.mu.Lock()
	store.recs[pod.Id] = &api.PodNetworkRecord{} // the runtime knows the pod
	store.mu.Unlock()
	if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-store.sets:
		if got != "10-net "+pod.Id+" 198.18.0.8" {
			t.Errorf("store got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("UpdatePodSandboxNetwork never reached the store; plugin log: %v", p.lines())
	}
	waitFor(t, "plugin to see the answer", func() bool { return slices.Contains(p.lines(), "Updated "+pod.Id+" err=<nil>") })
}

func TestNetwork_StatusConflictIsStale(t *testing.T) {
	e := newEnv(t)
	e.startNetPlugin(netScript{Name: "a", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	// b owns IPv6 at creation, then claims an IPv4 address in status.
	e.startNetPlugin(netScript{Name: "b", Idx: "20", Network: pj(v4net("fd00:198:18::5")), StatusNetwork: pj(v4net("198.18.0.6"))})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.GetNetwork().GetIps(); !slices.Equal(got, []string{"198.18.0.5", "fd00:198:18::5"}) {
		t.Errorf("ips = %v, want the stored ones", got)
	}
	if r := rec.GetStale()["20-b"]; !strings.Contains(r, "conflicting") || !strings.Contains(r, "198.18.0.6") {
		t.Errorf("stale = %v", rec.GetStale())
	}
}

func TestNetwork_SynchronizeCarriesAddresses(t *testing.T) {
	store := newMemStore()
	pod := netPod(1)
	store.recs[pod.Id] = &api.PodNetworkRecord{Network: &api.PodSandboxNetwork{Ips: []string{"198.18.0.5"}}}
	e := newEnv(t, runtime.WithPodNetworkStore(store), runtime.WithSyncFunc(func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return []*api.PodSandbox{pod}, nil, nil
	}))
	rec := newRecorder()
	e.startPlugin(&syncIPs{recorder: rec}, "10", "watcher")
	if got := rec.pod(pod.Id).GetIps(); !slices.Equal(got, []string{"198.18.0.5"}) {
		t.Fatalf("synchronized pod has ips %v, want the stored address", got)
	}
	if len(pod.Ips) != 0 {
		t.Fatal("the runtime's own pod object was modified")
	}
}

// syncIPs records the pods it is synchronized with.
type syncIPs struct{ *recorder }

func (s *syncIPs) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, p := range pods {
		s.record("Synchronize", p, nil)
	}
	return s.recorder.Synchronize(ctx, pods, ctrs)
}

func TestNetwork_StatusConflictByEarlierPlugin(t *testing.T) {
	e := newEnv(t)
	// a owns IPv6 at creation, then claims the IPv4 address b owns.
	e.startNetPlugin(netScript{Name: "a", Idx: "10", Network: pj(v4net("fd00:198:18::5")), StatusNetwork: pj(v4net("198.18.0.6"))})
	e.startNetPlugin(netScript{Name: "b", Idx: "20", Network: pj(v4net("198.18.0.5"))})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, true)
	if err != nil {
		t.Fatalf("status failed because of a plugin: %v", err)
	}
	if got := rec.GetNetwork().GetIps(); !slices.Equal(got, []string{"198.18.0.5", "fd00:198:18::5"}) {
		t.Errorf("ips = %v, want the stored ones", got)
	}
	if r := rec.GetStale()["10-a"]; !strings.Contains(r, "conflicting") {
		t.Errorf("stale = %v, want 10-a, the plugin whose report changed, marked", rec.GetStale())
	}
}

func TestNetwork_CleanupAfterCallerGaveUp(t *testing.T) {
	e := newEnv(t)
	first := e.startNetPlugin(netScript{Name: "first", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	e.startNetPlugin(netScript{Name: "liar", Idx: "20", Network: pj(v4net("224.0.0.5"))})
	pod := netPod(1)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel as soon as the request is under way: the cleanup must still
	// reach the plugin that had succeeded.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for len(first.lines()) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
	}()
	_, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	cancel()
	<-watched // the watcher ends with the test
	if err == nil {
		t.Fatal("RunPodSandbox succeeded")
	}
	waitFor(t, "cleanup of the first plugin", func() bool {
		return slices.Contains(first.lines(), "RemovePodSandbox "+pod.Id)
	})
}

func TestNetwork_HostNetworkIgnoresInvalidNetwork(t *testing.T) {
	e := newEnv(t)
	e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("127.0.0.1"))})
	pod := netPod(1)
	pod.Linux = nil
	if rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil || rec != nil {
		t.Fatalf("RunPodSandbox of a host-network pod = %v, %v", rec, err)
	}
}

func TestNetwork_StatusServedWhileRefreshing(t *testing.T) {
	const ttl = 100 * time.Millisecond
	clock := newFakeClock()
	e := newEnv(t, runtime.WithStatusCacheTTL(ttl), runtime.WithStatusTimeout(time.Second), runtime.WithClock(clock.now))
	p := e.startNetPlugin(netScript{Name: "net", Idx: "10", Network: pj(v4net("198.18.0.5"))})
	pod := netPod(1)
	last, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.PodSandboxStatus(context.Background(), pod, last, false); err != nil { // cold: a full round
		t.Fatal(err)
	}
	// The plugin now takes far longer than the status deadline. A call that
	// waited for a round would come back with the plugin marked stale; one
	// served from the recently expired cache comes back clean at once.
	p.kill()
	waitFor(t, "the plugin to be dropped", func() bool { return !e.joined("10-net") })
	clock.advance(ttl + 20*time.Millisecond) // expired, but recently
	rec, err := e.rt.PodSandboxStatus(context.Background(), pod, last, false)
	if err != nil || !slices.Equal(rec.GetNetwork().GetIps(), []string{"198.18.0.5"}) {
		t.Fatalf("status = %v, %v", rec, err)
	}
	if len(rec.GetStale()) != 0 {
		t.Errorf("the expired cached status was not served: stale = %v", rec.GetStale())
	}
	// The background round has since noticed the plugin is gone.
	waitFor(t, "the background refresh", func() bool {
		rec, _ := e.rt.PodSandboxStatus(context.Background(), pod, last, false)
		return rec.GetStale()["10-net"] != ""
	})
}

// TestNetwork_SecondConnectionCannotRewriteAConnectedPluginsNetwork: a
// second connection under a connected network plugin's name, refused at
// join, cannot replace or withdraw that plugin's part of any pod with
// UpdatePodSandboxNetwork between its registration and its failed join.
func TestNetwork_SecondConnectionCannotRewriteAConnectedPluginsNetwork(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "net")
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()

	fake := &impostor{rawPlugin: rawPlugin{events: int32(api.MaskFor(api.Event_RUN_POD_SANDBOX))},
		configuring: make(chan struct{}), hold: make(chan struct{})}
	defer close(fake.hold)
	rt, _ := connectRaw(t, e.dial(), fake)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "net", PluginIdx: "10"}); err != nil {
		t.Fatal(err)
	}
	<-fake.configuring
	_, werr := rt.UpdatePodSandboxNetwork(ctx, &api.UpdatePodSandboxNetworkRequest{PodId: pod.GetId(), Withdraw: true})
	got, _ := store.PodNetwork(context.Background(), pod.GetId())
	if werr == nil || len(got.GetNetwork().GetIps()) == 0 {
		t.Errorf("a second connection registered as the connected 10-net withdrew its part: error %v, pod addresses now %v",
			werr, got.GetNetwork().GetIps())
	}
}

// TestNetwork_EmptyUpdateDoesNotErase: an UpdatePodSandboxNetwork with an
// empty or nil network must not silently erase the plugin's part.
func TestNetwork_EmptyUpdateDoesNotErase(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  *api.PodSandboxNetwork
	}{
		{"nil", nil},
		{"empty", &api.PodSandboxNetwork{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			e := newEnv(t, runtime.WithPodNetworkStore(store))
			s := e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "net")
			pod := netPod(1)
			rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
			if err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			store.recs[pod.GetId()] = rec
			store.mu.Unlock()
			err = s.UpdatePodSandboxNetwork(context.Background(), pod.GetId(), tc.net)
			if err == nil {
				t.Errorf("an %s update was accepted", tc.name)
			}
			got, _ := store.PodNetwork(context.Background(), pod.GetId())
			if ips := got.GetNetwork().GetIps(); len(ips) != 1 || ips[0] != "198.18.0.5" {
				t.Errorf("after an %s update the pod's addresses are %v", tc.name, ips)
			}
		})
	}
}

// TestNetwork_WithdrawRemovesThePart: the explicit way to erase a
// plugin's part of a pod's network.
func TestNetwork_WithdrawRemovesThePart(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, runtime.WithPodNetworkStore(store))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "10", "v4")
	v6 := e.startPlugin(netHandler{&api.PodSandboxNetwork{Ips: []string{"fd00:198:18::5"}}}, "20", "v6")
	pod := netPod(1)
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.recs[pod.GetId()] = rec
	store.mu.Unlock()
	if err := v6.WithdrawPodSandboxNetwork(context.Background(), pod.GetId()); err != nil {
		t.Fatal(err)
	}
	got, _ := store.PodNetwork(context.Background(), pod.GetId())
	if ips := got.GetNetwork().GetIps(); len(ips) != 1 || ips[0] != "198.18.0.5" {
		t.Errorf("after the withdrawal the pod's addresses are %v, want the other plugin's", ips)
	}
	if _, ok := got.GetPlugins()["20-v6"]; ok || got.GetOwners()[api.OwnerIPv6] != "" {
		t.Errorf("the withdrawn part is still recorded: %v", got)
	}
}

// TestNetwork_RequiredPluginMustProvideAnAddress: a connected required
// network plugin that returns no address does not make a pod networked.
func TestNetwork_RequiredPluginMustProvideAnAddress(t *testing.T) {
	e := newEnv(t, runtime.WithRequiredNetworkPlugins("podnet"))
	e.startPlugin(netHandler{nil}, "99", "podnet")
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
	if err == nil {
		t.Fatal("a pod was created without an address although its required network plugin gave none")
	}
}

// TestNetwork_RequiredNameMatchesExactly: "10-podnet" is matched by the
// plugin of that full name only, not by one registered under the name
// "10-podnet" at another index.
func TestNetwork_RequiredNameMatchesExactly(t *testing.T) {
	e := newEnv(t, runtime.WithRequiredNetworkPlugins("10-podnet"))
	e.startPlugin(netHandler{v4net("198.18.0.5")}, "99", "10-podnet")
	if ready, _ := e.rt.NetworkReady(); ready {
		t.Fatal(`plugin "99-10-podnet" satisfied the required network plugin "10-podnet"`)
	}
}
