package cri_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
)

func TestRestart_KeepsSandboxesStatesAndAddresses(t *testing.T) {
	e := newEnv(t, envConfig{podnet: true, required: []string{"podnet"}})
	ctx := context.Background()
	cfgA := podConfig(1, false)
	a := e.run(cfgA)
	b := e.run(podConfig(2, false))
	h := e.run(podConfig(3, true))
	e.stopPod(b)
	before := map[string]*criapi.PodSandboxStatus{}
	for _, id := range []string{a, b, h} {
		before[id] = e.status(id, false).GetStatus()
	}
	checkDualStack(t, ips(before[a]))

	e.restart()

	if got, want := slices.Sorted(slices.Values(e.list(nil))), slices.Sorted(slices.Values([]string{a, b, h})); !slices.Equal(got, want) {
		t.Fatalf("sandboxes after restart = %v, want %v", got, want)
	}
	for id, was := range before {
		st := e.status(id, false).GetStatus()
		if st.GetState() != was.GetState() || !slices.Equal(ips(st), ips(was)) || st.GetCreatedAt() != was.GetCreatedAt() {
			t.Errorf("sandbox %s after restart: %v %v; before: %v %v", id[:13], st.GetState(), ips(st), was.GetState(), ips(was))
		}
	}
	if err := testutil.Ping("nrinet-"+a[:12], "198.18.210.1"); err != nil {
		t.Errorf("pod network after restart: %v", err)
	}
	// nri-podnet was told, in Synchronize, that a still uses its
	// addresses: it still reports them, having checked eth0.
	if info := verboseInfo(t, e.status(a, true)); info.Info[podnet.InfoCheck] != "ok" || len(info.Stale) != 0 {
		t.Errorf("nri-podnet's view of %s after restart: %+v", a[:13], info)
	}
	c := e.run(podConfig(4, false))
	// The name of a stays reserved.
	_, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfgA})
	wantCode(t, err, codes.AlreadyExists, "RunPodSandbox of a restored sandbox's configuration")

	// A namespace that vanished while nrinetd was down (a reboot) makes
	// the sandbox NOTREADY.
	e.stop()
	testutil.DeleteNetNS("nrinet-" + a[:12])
	e.start()
	st := e.status(a, false).GetStatus()
	if st.GetState() != criapi.PodSandboxState_SANDBOX_NOTREADY || len(ips(st)) != 0 {
		t.Errorf("sandbox whose namespace vanished: %v %v, want NOTREADY without address", st.GetState(), ips(st))
	}
	if st := e.status(c, false).GetStatus(); st.GetState() != criapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox %s: %v after the second restart", c[:13], st.GetState())
	}
	for _, id := range []string{a, b, c, h} {
		e.removePod(id)
	}
	e.stop()
	if owners := e.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}
