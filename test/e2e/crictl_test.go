package e2e

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// checkDualStack fails unless addrs is one IPv4 address of subnetV4, then
// one IPv6 address of subnetV6.
func checkDualStack(t *testing.T, what string, addrs []string) {
	t.Helper()
	v4, v6 := netip.MustParsePrefix(subnetV4), netip.MustParsePrefix(subnetV6)
	if len(addrs) != 2 || !v4.Contains(netip.MustParseAddr(addrs[0])) || !v6.Contains(netip.MustParseAddr(addrs[1])) {
		t.Fatalf("%s: addresses %v, want one of %s, then one of %s", what, addrs, subnetV4, subnetV6)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func TestCrictl_PodLifecycle(t *testing.T) {
	d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet"}})
	c := &counter{}
	d.startCounter(c)
	if out := d.must("version"); !strings.Contains(out, "RuntimeName:  nrinetd") || !strings.Contains(out, "RuntimeApiVersion:  v1") {
		t.Errorf("crictl version:\n%s", out)
	}

	web := d.runp(d.writePod("web", map[string]string{"app": "web"}, false))
	db := d.runp(d.writePod("db", map[string]string{"app": "db"}, false))

	// inspectp shows the plugin's dual-stack addresses and who set them.
	i := d.inspectp(web)
	if i.Status.State != "SANDBOX_READY" || i.Status.ID != web || i.Status.Labels["app"] != "web" {
		t.Errorf("inspectp: %+v", i.Status)
	}
	checkDualStack(t, "inspectp web", i.ips())
	if i.Info.NetNS != "/run/netns/nrinet-"+web[:12] || len(i.Info.IPs) != 2 || i.Info.IPs[0].Owner != "10-podnet" {
		t.Errorf("inspectp info: %+v", i.Info)
	}
	dbIPs := d.inspectp(db).ips()
	checkDualStack(t, "inspectp db", dbIPs)
	if err := testutil.Ping("nrinet-"+web[:12], gateway); err != nil {
		t.Error(err)
	}
	if err := testutil.Ping("nrinet-"+web[:12], dbIPs[0]); err != nil {
		t.Error(err)
	}

	// pods filters by label, by short ID, by state.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--label", "app=web"}, []string{web}},
		{[]string{"--label", "app=nothing"}, nil},
		{[]string{"--id", web[:13]}, []string{web}},
		{[]string{"--state", "ready"}, sorted([]string{web, db})},
		{[]string{"--state", "notready"}, nil},
	} {
		if got := sorted(d.pods(tc.args...)); !slices.Equal(got, tc.want) {
			t.Errorf("crictl pods -q %s = %v, want %v", strings.Join(tc.args, " "), got, tc.want)
		}
	}

	// stopp by short ID: no address, namespace gone, one NRI stop.
	if out := d.must("stopp", web[:13]); !strings.Contains(out, "Stopped sandbox "+web[:13]) {
		t.Errorf("crictl stopp printed %q", out)
	}
	i = d.inspectp(web)
	if i.Status.State != "SANDBOX_NOTREADY" || len(i.ips()) != 0 {
		t.Errorf("after stopp: state %s, addresses %v; want NOTREADY without address", i.Status.State, i.ips())
	}
	if p := filepath.Join("/run/netns", "nrinet-"+web[:12]); exists(p) {
		t.Errorf("network namespace %s still exists after stopp", p)
	}
	d.must("stopp", web)
	if n := c.Count("StopPodSandbox", web); n != 1 {
		t.Errorf("NRI StopPodSandbox sent %d times for two stopp, want once", n)
	}
	hadNetNS := c.NetNSAtStop(web)
	if !hadNetNS {
		t.Error("the namespace was gone when NRI StopPodSandbox arrived")
	}
	if got := d.pods("--state", "notready"); !slices.Equal(got, []string{web}) {
		t.Errorf("crictl pods --state notready = %v", got)
	}

	// rmp; then the sandbox is unknown.
	d.must("rmp", web)
	if got := d.pods(); !slices.Equal(got, []string{db}) {
		t.Errorf("crictl pods after rmp = %v, want [%s]", got, db)
	}
	if _, errOut, err := d.crictl("inspectp", web); err == nil || !strings.Contains(errOut, "NotFound") {
		t.Errorf("crictl inspectp of a removed pod: %v, %s", err, errOut)
	}
	if n := c.Count("RemovePodSandbox", web); n != 1 {
		t.Errorf("NRI RemovePodSandbox sent %d times, want once", n)
	}
	d.must("rmp", "-f", db)

	// Every address was released.
	d.stop()
	if owners := d.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}

func TestCrictl_RestartAfterKill(t *testing.T) {
	d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet"}})
	a := d.runp(d.writePod("a", nil, false))
	b := d.runp(d.writePod("b", nil, false))
	h := d.runp(d.writePod("h", nil, true))
	d.must("stopp", b)
	before := map[string]inspection{}
	for _, id := range []string{a, b, h} {
		before[id] = d.inspectp(id)
	}
	checkDualStack(t, "a", before[a].ips())

	d.kill()
	d.start()

	if got, want := sorted(d.pods()), sorted([]string{a, b, h}); !slices.Equal(got, want) {
		t.Fatalf("crictl pods after restart = %v, want %v", got, want)
	}
	for id, was := range before {
		now := d.inspectp(id)
		if now.Status.State != was.Status.State || !slices.Equal(now.ips(), was.ips()) || now.Status.CreatedAt != was.Status.CreatedAt {
			t.Errorf("pod %s after restart: %s %v %s; before %s %v %s", id[:13],
				now.Status.State, now.ips(), now.Status.CreatedAt, was.Status.State, was.ips(), was.Status.CreatedAt)
		}
	}
	if st := d.inspectp(a).Info.Stale; len(st) != 0 {
		t.Errorf("stale plugins after restart: %v", st)
	}
	if err := testutil.Ping("nrinet-"+a[:12], gateway); err != nil {
		t.Errorf("pod network after restart: %v", err)
	}
	for _, id := range []string{a, b, h} {
		d.must("rmp", "-f", id)
	}
	d.stop()
	if owners := d.podnetOwners(); len(owners) != 0 {
		t.Errorf("nri-podnet still allocates addresses to %v", owners)
	}
}

func TestCrictl_RequiredPluginMissing(t *testing.T) {
	d := newDaemon(t, daemonConfig{required: []string{"podnet"}})
	const reason = `required network plugin "podnet" not connected`
	before := testutil.NetNSNames("nrinet-*")

	_, errOut, err := d.crictl("runp", d.writePod("web", nil, false))
	errOut = strings.ReplaceAll(errOut, `\"`, `"`) // crictl logs the error quoted
	if err == nil || !strings.Contains(errOut, reason) || !strings.Contains(errOut, "Unavailable") {
		t.Errorf("crictl runp without the network plugin: %v\n%s\nwant it to fail with %q", err, errOut, reason)
	}
	info := d.info()
	found := false
	for _, c := range info.Status.Conditions {
		if c.Type == "NetworkReady" {
			found = true
			if c.Status || c.Reason != "NetworkPluginNotReady" || !strings.Contains(c.Message, reason) {
				t.Errorf("crictl info NetworkReady = %+v, want false with %q", c, reason)
			}
		}
	}
	if !found || info.NRI.NetworkReady {
		t.Errorf("crictl info: %+v", info)
	}
	if got := d.pods(); len(got) != 0 {
		t.Errorf("crictl pods = %v after a failed runp", got)
	}
	if leaked := testutil.LeakedNetNS("nrinet-*", before, testutil.ForeignNetNSGrace); len(leaked) != 0 {
		t.Errorf("network namespaces leaked: %v", leaked)
	}
	// A host-network pod needs no network plugin.
	h := d.runp(d.writePod("h", nil, true))
	d.must("rmp", "-f", h)
}
