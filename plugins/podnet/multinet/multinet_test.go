package multinet_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// env is a test's world: a "host" namespace of its own (bridges, host
// ends, the macvlan master and the host interface live there), a "wire"
// namespace holding the far ends of the host's two veth uplinks, and a
// manager over them.
type env struct {
	t     testing.TB
	tag   string // unique per test, in every name
	host  string // host namespace name
	wire  string
	dir   string
	cfg   multinet.Config
	m     *multinet.Manager
	hostH *netlink.Handle
}

func short(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, []multinet.Network{
		{Name: "blue", Kind: multinet.KindBridge, Bridge: "mnbr0",
			Subnets: []string{"198.18.10.0/24", "fd00:198:18:10::/64"}, Routes: []string{"198.18.64.0/18"}},
		{Name: "tiny", Kind: multinet.KindBridge, Bridge: "mnbr1", Subnets: []string{"198.18.11.0/30"}},
		{Name: "mv", Kind: multinet.KindMacvlan, Master: "uplink0", Subnets: []string{"198.18.12.0/24"}},
		{Name: "nic", Kind: multinet.KindHost, Interface: "hostnic0"},
	})
}

// newEnvWith is newEnv with networks (their names distinct from the
// uplinks', uplink0 and hostnic0).
func newEnvWith(t testing.TB, networks []multinet.Network) *env {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	e := &env{t: t, tag: short(t.Name()), dir: t.TempDir()}
	e.host = "mnt-h-" + e.tag
	e.wire = "mnt-w-" + e.tag
	testutil.NewNetNS(t, e.host)
	testutil.NewNetNS(t, e.wire)
	// The macvlan's master and the interface to move: veths whose far
	// ends are in the wire namespace.
	testutil.Run(t, "ip", "-n", e.host, "link", "add", "uplink0", "type", "veth", "peer", "name", "wup0", "netns", e.wire)
	testutil.Run(t, "ip", "-n", e.host, "link", "add", "hostnic0", "type", "veth", "peer", "name", "wnic0", "netns", e.wire)
	testutil.Run(t, "ip", "-n", e.host, "link", "set", "uplink0", "up")
	testutil.Run(t, "ip", "-n", e.wire, "link", "set", "wup0", "up")
	testutil.Run(t, "ip", "-n", e.wire, "addr", "add", "198.18.12.254/24", "dev", "wup0")
	e.cfg = multinet.Config{StateDir: e.dir, Networks: networks}
	e.open()
	ns, err := netns.GetFromName(e.host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	if e.hostH, err = netlink.NewHandleAt(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.hostH.Close)
	return e
}

// open (re)opens the manager, as a restarted process would.
func (e *env) open() {
	e.t.Helper()
	m, err := multinet.New(e.cfg, multinet.WithHostNetNS("/var/run/netns/"+e.host), multinet.WithNoSync())
	if err != nil {
		e.t.Fatal(err)
	}
	e.m = m
	e.t.Cleanup(func() { m.Close() })
}

// pod makes a pod namespace; it returns its name and path.
func (e *env) pod(n int) (string, string) {
	e.t.Helper()
	name := "mnt-p" + string(rune('0'+n)) + "-" + e.tag
	return name, testutil.NewNetNS(e.t, name)
}

// links lists the interfaces of a namespace, by name, sorted.
func links(t testing.TB, ns string) []string {
	t.Helper()
	out := testutil.Run(t, "ip", "-n", ns, "-o", "link", "show")
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// addrs lists the global addresses of dev in ns, as CIDRs, sorted.
func addrs(t *testing.T, ns, dev string) []string {
	t.Helper()
	out := testutil.Run(t, "ip", "-n", ns, "-o", "addr", "show", "dev", dev, "scope", "global")
	var as []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		for i := range f {
			if (f[i] == "inet" || f[i] == "inet6") && i+1 < len(f) {
				as = append(as, f[i+1])
			}
		}
	}
	slices.Sort(as)
	return as
}

func strs(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

func mac(t *testing.T, ns, dev string) string {
	t.Helper()
	out := testutil.Run(t, "ip", "-n", ns, "-o", "link", "show", "dev", dev)
	f := strings.Fields(out)
	for i := range f {
		if f[i] == "link/ether" && i+1 < len(f) {
			return f[i+1]
		}
	}
	t.Fatalf("no MAC for %s in %s: %s", dev, ns, out)
	return ""
}

// clean checks that owner holds nothing: no record, no address in any
// network, no host end, only lo in its namespace, the host interface not
// in its namespace (and, if nicHome, on the host).
func (e *env) clean(owner, podNS string, nicHome bool) {
	e.t.Helper()
	itfs, err := e.m.Interfaces(owner)
	if err != nil || len(itfs) != 0 {
		e.t.Errorf("Interfaces(%s) = %v, %v; want none", owner, itfs, err)
	}
	for _, n := range e.cfg.Networks {
		owners, err := e.m.AddrOwners(n.Name)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range owners {
			if strings.HasPrefix(o, owner+"/") {
				e.t.Errorf("network %s: %s still holds addresses", n.Name, o)
			}
		}
	}
	hostLinks := links(e.t, e.host)
	for _, ifName := range []string{"net1", "net2", "net3"} {
		if l := multinet.HostVethName(owner, ifName); slices.Contains(hostLinks, l) {
			e.t.Errorf("host end %s of %s/%s left on the host", l, owner, ifName)
		}
	}
	if podNS != "" {
		if got := links(e.t, podNS); !slices.Equal(got, []string{"lo"}) {
			e.t.Errorf("pod %s has %v; want only lo", podNS, got)
		}
	}
	if nicHome && !slices.Contains(hostLinks, "hostnic0") {
		e.t.Errorf("hostnic0 is not back on the host: %v", links(e.t, e.host))
	}
}

func ping(t *testing.T, ns, addr string) {
	t.Helper()
	if err := testutil.Ping(ns, addr); err != nil {
		t.Error(err)
	}
}

func TestManager_Attach(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		network string
		addrs   int
		check   func(t *testing.T, podNS string, itf multinet.Interface)
	}{
		{name: "bridge", network: "blue", addrs: 2, check: func(t *testing.T, podNS string, itf multinet.Interface) {
			ping(t, podNS, "198.18.10.1") // the bridge's gateway, in the host namespace
			out := testutil.Run(t, "ip", "-n", podNS, "route", "show", "198.18.64.0/18")
			if !strings.Contains(out, "via 198.18.10.1 dev net1") {
				t.Errorf("route to 198.18.64.0/18: %q; want via 198.18.10.1 dev net1", out)
			}
			if !strings.HasPrefix(itf.HostName, multinet.HostVethPrefix) || !slices.Contains(links(t, e.host), itf.HostName) {
				t.Errorf("host end %q not on the host: %v", itf.HostName, links(t, e.host))
			}
		}},
		{name: "macvlan", network: "mv", addrs: 1, check: func(t *testing.T, podNS string, _ multinet.Interface) {
			ping(t, podNS, "198.18.12.254") // the far end of the master
		}},
		{name: "host interface", network: "nic", addrs: 0, check: func(t *testing.T, podNS string, itf multinet.Interface) {
			if slices.Contains(links(t, e.host), "hostnic0") {
				t.Error("hostnic0 is still on the host")
			}
			if itf.HostName != "hostnic0" {
				t.Errorf("HostName = %q; want hostnic0", itf.HostName)
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			podNS, path := e.pod(i)
			owner := "sandbox-" + tc.network
			var hostMAC string
			if tc.network == "nic" {
				hostMAC = mac(t, e.host, "hostnic0")
			}
			itfs, err := e.m.Attach(ctx, owner, multinet.Pod{}, path, []multinet.Request{{Claim: "ns1/claim-" + tc.network, Network: tc.network, IfName: "net1"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(itfs) != 1 {
				t.Fatalf("got %d interfaces; want 1", len(itfs))
			}
			itf := itfs[0]
			if itf.Name != "net1" || itf.Network != tc.network || itf.Claim != "ns1/claim-"+tc.network || len(itf.Addrs) != tc.addrs {
				t.Errorf("interface %+v; want net1 of %s with %d addresses", itf, tc.network, tc.addrs)
			}
			if got := mac(t, podNS, "net1"); got != itf.MAC {
				t.Errorf("net1's MAC %s; Attach said %s", got, itf.MAC)
			}
			if hostMAC != "" && itf.MAC != hostMAC {
				t.Errorf("moved interface's MAC %s; on the host it was %s", itf.MAC, hostMAC)
			}
			if got, want := addrs(t, podNS, "net1"), strs(itf.Addrs); !slices.Equal(got, want) {
				t.Errorf("net1's addresses %v; Attach said %v", got, want)
			}
			if recorded, _ := e.m.Interfaces(owner); !slices.EqualFunc(recorded, itfs, func(a, b multinet.Interface) bool { return a.MAC == b.MAC && a.Name == b.Name }) {
				t.Errorf("Interfaces = %+v; want %+v", recorded, itfs)
			}
			tc.check(t, podNS, itf)
			if err := e.m.Detach(ctx, owner, path); err != nil {
				t.Fatal(err)
			}
			e.clean(owner, podNS, true)
			if hostMAC != "" {
				if got := mac(t, e.host, "hostnic0"); got != hostMAC {
					t.Errorf("hostnic0 back with MAC %s; want %s", got, hostMAC)
				}
			}
		})
	}
}

// Two pods on one bridge network reach each other over net1.
func TestManager_Attach_twoPodsOneBridge(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ns1, p1 := e.pod(1)
	_, p2 := e.pod(2)
	a, err := e.m.Attach(ctx, "pod-a", multinet.Pod{}, p1, []multinet.Request{{Claim: "ns/a", Network: "blue", IfName: "net1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.m.Attach(ctx, "pod-b", multinet.Pod{}, p2, []multinet.Request{{Claim: "ns/b", Network: "blue", IfName: "net1"}, {Claim: "ns/b2", Network: "mv", IfName: "net2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 2 || b[1].Name != "net2" {
		t.Fatalf("pod-b got %+v; want net1 and net2", b)
	}
	if a[0].Addrs[0] == b[0].Addrs[0] {
		t.Fatalf("both pods got %s", a[0].Addrs[0])
	}
	ping(t, ns1, b[0].Addrs[0].Addr().String())
	ping(t, ns1, b[0].Addrs[1].Addr().String())
	for _, o := range []struct{ owner, path string }{{"pod-a", p1}, {"pod-b", p2}} {
		if err := e.m.Detach(ctx, o.owner, o.path); err != nil {
			t.Fatal(err)
		}
	}
	e.clean("pod-a", ns1, true)
	e.clean("pod-b", "", true)
}

// Bad requests fail with errors that name the claim, the network and the
// value, and leave nothing of the failed call.
func TestManager_Attach_refused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// What the cases contend with: pod 9 holds tiny's only address and
	// the host interface.
	_, holder := e.pod(9)
	if _, err := e.m.Attach(ctx, "holder", multinet.Pod{}, holder, []multinet.Request{
		{Claim: "ns/hold-tiny", Network: "tiny", IfName: "net1"},
		{Claim: "ns/hold-nic", Network: "nic", IfName: "net2"},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		hostNet bool
		reqs    []multinet.Request
		is      error
		says    []string
	}{
		{name: "unknown network", reqs: []multinet.Request{{Claim: "ns/c1", Network: "red", IfName: "net1"}},
			is: multinet.ErrUnknownNetwork, says: []string{"claim ns/c1 (net1)", `no network "red"`}},
		{name: "exhausted subnet", reqs: []multinet.Request{{Claim: "ns/c2", Network: "tiny", IfName: "net1"}},
			is: ipam.ErrExhausted, says: []string{"claim ns/c2 (net1)", `network "tiny"`, "no free address in 198.18.11.0/30"}},
		{name: "host interface taken", reqs: []multinet.Request{{Claim: "ns/c3", Network: "nic", IfName: "net1"}},
			is: multinet.ErrHostInterfaceTaken, says: []string{"claim ns/c3 (net1)", `host interface "hostnic0" is taken by holder`}},
		{name: "host network", hostNet: true, reqs: []multinet.Request{{Claim: "ns/c4", Network: "blue", IfName: "net1"}},
			is: multinet.ErrHostNetwork, says: []string{"claim ns/c4 (net1)", "host network"}},
		{name: "second of two fails, first undone", reqs: []multinet.Request{
			{Claim: "ns/c5", Network: "blue", IfName: "net1"},
			{Claim: "ns/c5", Network: "mv", IfName: "net2"},
			{Claim: "ns/c6", Network: "tiny", IfName: "net3"},
		}, is: ipam.ErrExhausted, says: []string{"claim ns/c6 (net3)", `network "tiny"`}},
		{name: "interface name twice", reqs: []multinet.Request{
			{Claim: "ns/c7", Network: "blue", IfName: "net1"}, {Claim: "ns/c8", Network: "mv", IfName: "net1"},
		}, says: []string{"claim ns/c8 (net1)", `"net1" asked for twice`}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			podNS, path := e.pod(i)
			if tc.hostNet {
				podNS, path = "", ""
			}
			owner := "refused-" + short(tc.name)
			_, err := e.m.Attach(ctx, owner, multinet.Pod{}, path, tc.reqs)
			if err == nil {
				t.Fatal("Attach succeeded")
			}
			var re *multinet.RequestError
			if !errors.As(err, &re) {
				t.Errorf("error %v is no *RequestError", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v; want one matching %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			e.clean(owner, podNS, false)
		})
	}
	if err := e.m.Detach(ctx, "holder", holder); err != nil {
		t.Fatal(err)
	}
	e.clean("holder", "", true)
}

// A new manager (a restarted process) knows the interfaces of the one
// before, keeps those of live owners, detaches those of owners that are
// gone, and gives the host interface back.
func TestManager_restart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ns1, p1 := e.pod(1)
	_, p2 := e.pod(2)
	kept, err := e.m.Attach(ctx, "live", multinet.Pod{}, p1, []multinet.Request{{Claim: "ns/live", Network: "blue", IfName: "net1"}, {Claim: "ns/live", Network: "nic", IfName: "net2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Attach(ctx, "gone", multinet.Pod{}, p2, []multinet.Request{{Claim: "ns/gone", Network: "blue", IfName: "net1"}, {Claim: "ns/gone", Network: "mv", IfName: "net2"}}); err != nil {
		t.Fatal(err)
	}
	e.m.Close()
	e.open()
	// "gone"'s pod went while nothing ran.
	testutil.DeleteNetNS("mnt-p2-" + e.tag)
	// The host interface is still held by "live", in the new manager too.
	_, p3 := e.pod(3)
	if _, err := e.m.Attach(ctx, "third", multinet.Pod{}, p3, []multinet.Request{{Claim: "ns/third", Network: "nic", IfName: "net1"}}); !errors.Is(err, multinet.ErrHostInterfaceTaken) {
		t.Errorf("third pod took hostnic0: %v", err)
	}
	detached, err := e.m.Sync(ctx, func(owner string) bool { return owner == "live" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(detached, []string{"gone"}) {
		t.Errorf("Sync detached %v; want [gone]", detached)
	}
	e.clean("gone", "", false)
	// "live" keeps everything.
	got, err := e.m.Interfaces("live")
	if err != nil || len(got) != 2 || got[0].MAC != kept[0].MAC || got[0].Addrs[0] != kept[0].Addrs[0] {
		t.Errorf("Interfaces(live) = %+v, %v; want %+v", got, err, kept)
	}
	if as := addrs(t, ns1, "net1"); !slices.Equal(as, strs(kept[0].Addrs)) {
		t.Errorf("live's net1 has %v; want %v", as, strs(kept[0].Addrs))
	}
	ping(t, ns1, "198.18.10.1")
	if err := e.m.Detach(ctx, "live", p1); err != nil {
		t.Fatal(err)
	}
	e.clean("live", ns1, true)
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		json string
		says string
	}{
		{"no state dir", `{"networks":[]}`, "no stateDir"},
		{"bad name", `{"stateDir":"/x","networks":[{"name":"Blue","kind":"bridge","bridge":"b","subnets":["198.18.0.0/24"]}]}`, `name "Blue" is not a DNS label`},
		{"twice", `{"stateDir":"/x","networks":[{"name":"a","kind":"host","interface":"e1"},{"name":"a","kind":"host","interface":"e2"}]}`, `network "a": defined twice`},
		{"bad kind", `{"stateDir":"/x","networks":[{"name":"a","kind":"ipvlan"}]}`, `kind "ipvlan" is not bridge, macvlan or host`},
		{"no master", `{"stateDir":"/x","networks":[{"name":"a","kind":"macvlan","subnets":["198.18.0.0/24"]}]}`, `master "" is not a valid interface name`},
		{"bad subnet", `{"stateDir":"/x","networks":[{"name":"a","kind":"bridge","bridge":"b","subnets":["198.18.0.1/24"]}]}`, "not masked"},
		{"bad route", `{"stateDir":"/x","networks":[{"name":"a","kind":"bridge","bridge":"b","subnets":["198.18.0.0/24"],"routes":["10.0.0.1/8"]}]}`, `route "10.0.0.1/8" is not masked`},
		{"interface twice", `{"stateDir":"/x","networks":[{"name":"a","kind":"host","interface":"e1"},{"name":"b","kind":"host","interface":"e1"}]}`, `interface "e1" is network "a"'s too`},
		{"unknown field", `{"stateDir":"/x","networks":[],"extra":1}`, "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := multinet.FromBytes([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("FromBytes: %v; want an error saying %q", err, tc.says)
			}
		})
	}
	if _, err := multinet.FromBytes([]byte(`{"stateDir":"/x","networks":[{"name":"a","kind":"host","interface":"e1","subnets":["198.18.0.0/24"]}]}`)); err != nil {
		t.Errorf("a host network with a subnet: %v", err)
	}
}
