package hostport_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newNetNSMapper returns a Mapper working in a fresh network namespace
// (deleted by name when the test ends), and the namespace, open.
func newNetNSMapper(t *testing.T) (*hostport.Mapper, *os.File) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	name := "nrhp" + randHex(4)
	f, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	// The node's own addresses that the tests publish host ports on.
	testutil.Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	testutil.Run(t, "ip", "-n", name, "addr", "add", "198.19.0.1/32", "dev", "lo")
	testutil.Run(t, "ip", "-n", name, "addr", "add", "fd00:198:18:ff::1/128", "dev", "lo")
	t.Cleanup(func() { f.Close() })
	m, err := hostport.New(hostport.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Uninstall() })
	return m, f
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func comments(t *testing.T, m *hostport.Mapper) []string {
	t.Helper()
	rules, err := m.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rules {
		out = append(out, r.Chain+": "+strings.TrimPrefix(r.Comment, "nrinet-podnet-hostport "))
	}
	return out
}

// The rules of a dual-stack pod with TCP, UDP and SCTP mappings, on every
// address and on one, as the kernel holds them.
func TestMapper_RulesInNetNS(t *testing.T) {
	m, ns := newNetNSMapper(t)
	pod := hostport.Pod{
		PodRef: hostport.PodRef{ID: "p1", Namespace: "default", Name: "web"},
		Addrs:  addrs("198.18.1.5", "fd00:198:18:1::5"),
		Mappings: []hostport.Mapping{
			{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80},
			{Protocol: hostport.UDP, HostPort: 5353, ContainerPort: 53, HostIP: netip.MustParseAddr("198.19.0.1")},
			{Protocol: hostport.SCTP, HostPort: 9999, ContainerPort: 9, HostIP: netip.MustParseAddr("fd00:198:18:ff::1")},
			{Protocol: hostport.TCP, ContainerPort: 443}, // no host port: declared only
		},
	}
	for i := range 2 { // Add again replaces: the same rules
		if err := m.Add(pod); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	want := []string{
		"prerouting: pod=p1 tcp *:8080 -> 198.18.1.5:80",
		"prerouting: pod=p1 tcp [*]:8080 -> [fd00:198:18:1::5]:80",
		"prerouting: pod=p1 udp 198.19.0.1:5353 -> 198.18.1.5:53",
		"prerouting: pod=p1 sctp [fd00:198:18:ff::1]:9999 -> [fd00:198:18:1::5]:9",
		"output: pod=p1 tcp *:8080 -> 198.18.1.5:80",
		"output: pod=p1 tcp [*]:8080 -> [fd00:198:18:1::5]:80",
		"output: pod=p1 udp 198.19.0.1:5353 -> 198.18.1.5:53",
		"output: pod=p1 sctp [fd00:198:18:ff::1]:9999 -> [fd00:198:18:1::5]:9",
		"postrouting: pod=p1 hairpin 198.18.1.5 to itself: masquerade",
		"postrouting: pod=p1 hairpin fd00:198:18:1::5 to itself: masquerade",
	}
	if got := comments(t, m); !slices.Equal(got, want) {
		t.Errorf("rules:\n got %q\nwant %q", got, want)
	}

	// What the SCTP rule matches and where it sends the packets, read
	// back through the library (no traffic: the kernel here has no SCTP
	// sockets, but SCTP conntrack and NAT).
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tb := &nftables.Table{Name: hostport.TableName, Family: nftables.TableFamilyINet}
	ch, err := c.ListChain(tb, hostport.ChainPrerouting)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Type != nftables.ChainTypeNAT || *ch.Hooknum != *nftables.ChainHookPrerouting || *ch.Priority != *nftables.ChainPriorityNATDest {
		t.Errorf("chain %s: type %s hook %d priority %d; want nat prerouting -100", ch.Name, ch.Type, *ch.Hooknum, *ch.Priority)
	}
	rules, err := c.GetRules(tb, ch)
	if err != nil {
		t.Fatal(err)
	}
	var l4 []byte
	var dport, toPort []byte
	var daddr, to netip.Addr
	var nat *expr.NAT
	for _, e := range rules[3].Exprs {
		switch e := e.(type) {
		case *expr.Cmp:
			switch len(e.Data) {
			case 1:
				l4 = append(l4, e.Data[0])
			case 2:
				dport = e.Data
			case 16:
				daddr, _ = netip.AddrFromSlice(e.Data)
			}
		case *expr.Immediate:
			if e.Register == 1 {
				to, _ = netip.AddrFromSlice(e.Data)
			} else {
				toPort = e.Data
			}
		case *expr.NAT:
			nat = e
		}
	}
	if !slices.Equal(l4, []byte{10, 132}) || !slices.Equal(dport, []byte{0x27, 0x0f}) || daddr.String() != "fd00:198:18:ff::1" ||
		to.String() != "fd00:198:18:1::5" || !slices.Equal(toPort, []byte{0, 9}) ||
		nat == nil || nat.Type != expr.NATTypeDestNAT || nat.Family != 10 || !nat.Specified {
		t.Errorf("SCTP rule: nfproto+l4proto %v dport %x daddr %s -> %s port %x nat %+v; want ipv6 sctp 9999 fd00:198:18:ff::1 -> fd00:198:18:1::5 port 9, dnat ip6",
			l4, dport, daddr, to, toPort, nat)
	}

	if err := m.Remove("p1"); err != nil {
		t.Fatal(err)
	}
	if got := comments(t, m); len(got) != 0 {
		t.Errorf("after Remove: rules %q", got)
	}
	if err := m.Remove("p1"); err != nil {
		t.Errorf("Remove again: %v", err)
	}
}

// A pod without host ports makes no table.
func TestMapper_NoHostPortNoTable(t *testing.T) {
	m, ns := newNetNSMapper(t)
	pod := hostport.Pod{PodRef: hostport.PodRef{ID: "p"}, Addrs: addrs("198.18.1.5"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, ContainerPort: 80}}}
	if err := m.Add(pod); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(pod.ID); err != nil {
		t.Fatal(err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 {
		t.Errorf("%d tables after a pod without host ports, want none", len(tables))
	}
}

// A second pod asking for a host port that another holds is refused with
// a ConflictError naming both, and adds no rule; the holder's stay.
func TestMapper_ConflictInNetNS(t *testing.T) {
	m, _ := newNetNSMapper(t)
	holder := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "p1", Namespace: "default", Name: "one"},
		Addrs:    addrs("198.18.1.5", "fd00:198:18:1::5"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 54323, ContainerPort: 80, HostIP: netip.MustParseAddr("127.0.0.1")}},
	}
	if err := m.Add(holder); err != nil {
		t.Fatal(err)
	}
	before := comments(t, m)
	other := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "p2", Namespace: "other", Name: "two"},
		Addrs:    addrs("198.18.1.6"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 54323, ContainerPort: 8080}},
	}
	err := m.Add(other)
	var ce *hostport.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, hostport.ErrConflict) || ce.Holder.ID != "p1" || ce.Pod.ID != "p2" {
		t.Fatalf("Add of a conflicting pod: %v; want a ConflictError naming p1 and p2", err)
	}
	for _, w := range []string{"other/two", "default/one", "tcp *:54323", "tcp 127.0.0.1:54323"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if got := comments(t, m); !slices.Equal(got, before) {
		t.Errorf("rules after the refused pod:\n got %q\nwant %q", got, before)
	}
	if got := m.Holders(); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("holders %q, want p1 only", got)
	}
}

// Sync keeps the rules of the pods it is given, restores missing ones and
// takes out those of every other pod, in one transaction; with no pod it
// deletes the table. Uninstall deletes the table too.
func TestMapper_SyncInNetNS(t *testing.T) {
	m, ns := newNetNSMapper(t)
	pod := func(id string, hp uint16) hostport.Pod {
		return hostport.Pod{PodRef: hostport.PodRef{ID: id}, Addrs: addrs("198.18.1.5"),
			Mappings: []hostport.Mapping{{Protocol: hostport.UDP, HostPort: hp, ContainerPort: 53}}}
	}
	for _, p := range []hostport.Pod{pod("live", 5353), pod("gone", 5354)} {
		if err := m.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	// A Mapper of a restarted plugin knows nothing, and is told of "live"
	// and of "new", whose rules the table lacks.
	fresh, err := hostport.New(hostport.WithNetNS(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if skipped, err := fresh.Sync([]hostport.Pod{pod("live", 5353), pod("new", 5355)}); err != nil || len(skipped) > 0 {
		t.Fatal(skipped, err)
	}
	rules, err := fresh.Rules()
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]int{}
	for _, r := range rules {
		pods[r.Pod]++
	}
	if len(pods) != 2 || pods["live"] != 3 || pods["new"] != 3 {
		t.Errorf("after Sync, rules per pod %v; want 3 of live and of new (prerouting, output, postrouting)", pods)
	}
	if got := fresh.Holders(); !slices.Equal(got, []string{"live", "new"}) {
		t.Errorf("holders %q", got)
	}
	// A conflict in the list: the second pod gets nothing, the first its rules.
	skipped, err := fresh.Sync([]hostport.Pod{pod("live", 5353), pod("clash", 5353)})
	if err != nil || len(skipped) != 1 || !errors.Is(skipped[0], hostport.ErrConflict) {
		t.Errorf("Sync with a conflict: skipped %v, %v; want one ErrConflict", skipped, err)
	}
	if got := fresh.Holders(); !slices.Equal(got, []string{"live"}) {
		t.Errorf("holders after a conflicting Sync %q", got)
	}
	if _, err := fresh.Sync(nil); err != nil {
		t.Fatal(err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 {
		t.Errorf("after Sync with no pod: %d tables, want none", len(tables))
	}
	if err := fresh.Add(pod("live", 5353)); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 {
		t.Errorf("after Uninstall: %d tables, want none", len(tables))
	}
	if err := fresh.Uninstall(); err != nil {
		t.Errorf("Uninstall again: %v", err)
	}
}

// A host IP that is not the node's (another pod's, a remote host's) is
// refused with a NotLocalError naming the pod, the host IP and the port,
// and writes nothing; Sync skips such a pod and writes the others.
func TestMapper_NotLocalInNetNS(t *testing.T) {
	m, _ := newNetNSMapper(t)
	for _, ip := range []string{"198.18.1.6", "198.51.100.9", "fd00:198:18:1::6"} {
		pod := hostport.Pod{
			PodRef:   hostport.PodRef{ID: "p1", Namespace: "default", Name: "thief"},
			Addrs:    addrs("198.18.1.5", "fd00:198:18:1::5"),
			Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80, HostIP: netip.MustParseAddr(ip)}},
		}
		err := m.Add(pod)
		var nl *hostport.NotLocalError
		if !errors.Is(err, hostport.ErrNotLocal) || !errors.As(err, &nl) || nl.Pod.Name != "thief" {
			t.Fatalf("Add with host IP %s = %v, want a NotLocalError", ip, err)
		}
		for _, s := range []string{"default/thief", ip, "8080"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not say %q", err, s)
			}
		}
		if got := comments(t, m); len(got) != 0 {
			t.Errorf("host IP %s: rules written: %q", ip, got)
		}
	}
	ok := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "p2", Namespace: "default", Name: "web"},
		Addrs:    addrs("198.18.1.7"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8081, ContainerPort: 80, HostIP: netip.MustParseAddr("198.19.0.1")}},
	}
	bad := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "p3", Namespace: "default", Name: "thief"},
		Addrs:    addrs("198.18.1.8"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8082, ContainerPort: 80, HostIP: netip.MustParseAddr("198.18.1.7")}},
	}
	skipped, err := m.Sync([]hostport.Pod{ok, bad})
	if err != nil || len(skipped) != 1 || !errors.Is(skipped[0], hostport.ErrNotLocal) {
		t.Fatalf("Sync = %v, skipped %v; want the thief skipped", err, skipped)
	}
	if m.Holds("p3") || !m.Holds("p2") {
		t.Errorf("holders after Sync: %v", m.Holders())
	}
}

// routeLocalnet reads route_localnet of iface in the namespace name.
func routeLocalnet(t *testing.T, name, iface string) string {
	t.Helper()
	return strings.TrimSpace(testutil.Run(t, "ip", "netns", "exec", name, "cat", "/proc/sys/net/ipv4/conf/"+iface+"/route_localnet"))
}

// WithLocalhost: the first host port brings the guard (a filter chain at
// priority raw), the masquerade of the node's loopback connections and
// route_localnet on the interface; the last one takes them out, the table
// with them. Sync does the same, and Uninstall turns route_localnet off
// and deletes the table; an interface that is gone is fine then.
func TestMapper_LocalhostInNetNS(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	name := "nrhp" + randHex(4)
	ns, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	testutil.Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	testutil.Run(t, "ip", "-n", name, "link", "add", "br0", "type", "bridge")
	m, err := hostport.New(hostport.WithNetNS(int(ns.Fd())), hostport.WithLocalhost("br0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Uninstall() })
	web := hostport.Pod{PodRef: hostport.PodRef{ID: "web"}, Addrs: addrs("198.18.1.5"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80, HostIP: netip.MustParseAddr("127.0.0.1")}}}
	db := hostport.Pod{PodRef: hostport.PodRef{ID: "db"}, Addrs: addrs("198.18.1.6"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 5432, ContainerPort: 5432}}}
	if got := routeLocalnet(t, name, "br0"); got != "0" {
		t.Fatalf("route_localnet of br0 = %s before any host port", got)
	}
	for _, p := range []hostport.Pod{web, db} {
		if err := m.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	own := []string{
		"guard: localhost: guard, drop what reaches 127.0.0.0/8 from any interface but lo (CVE-2020-8558)",
		"guard: localhost: guard, drop what reaches ::1/128 from any interface but lo (CVE-2020-8558)",
		"postrouting: localhost: masquerade the node's connections from 127.0.0.0/8 to a pod behind br0",
	}
	got := comments(t, m)
	for _, w := range own {
		if n := countOf(got, w); n != 1 {
			t.Errorf("rule %q %d times, want once:\n%q", w, n, got)
		}
	}
	if got := routeLocalnet(t, name, "br0"); got != "1" {
		t.Errorf("route_localnet of br0 = %s with host ports, want 1", got)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tb := &nftables.Table{Name: hostport.TableName, Family: nftables.TableFamilyINet}
	ch, err := c.ListChain(tb, hostport.ChainGuard)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Type != nftables.ChainTypeFilter || *ch.Hooknum != *nftables.ChainHookPrerouting || *ch.Priority != *nftables.ChainPriorityRaw {
		t.Errorf("chain %s: type %s hook %d priority %d; want filter prerouting -300", ch.Name, ch.Type, *ch.Hooknum, *ch.Priority)
	}

	// web goes: the rest stays. db, the last, goes: everything goes.
	if err := m.Remove("web"); err != nil {
		t.Fatal(err)
	}
	if got := comments(t, m); countOf(got, own[0]) != 1 || routeLocalnet(t, name, "br0") != "1" {
		t.Errorf("after the first of two pods went: rules %q, route_localnet %s", got, routeLocalnet(t, name, "br0"))
	}
	if err := m.Remove("db"); err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 || routeLocalnet(t, name, "br0") != "0" {
		t.Errorf("after the last host port went: %d tables, route_localnet %s; want none and 0", len(tables), routeLocalnet(t, name, "br0"))
	}

	// A restarted Mapper's Sync restores them; one with no pod takes them out.
	fresh, err := hostport.New(hostport.WithNetNS(int(ns.Fd())), hostport.WithLocalhost("br0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Sync([]hostport.Pod{web}); err != nil {
		t.Fatal(err)
	}
	if got := comments(t, fresh); countOf(got, own[2]) != 1 || routeLocalnet(t, name, "br0") != "1" {
		t.Errorf("after Sync: rules %q, route_localnet %s", got, routeLocalnet(t, name, "br0"))
	}
	if _, err := fresh.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 || routeLocalnet(t, name, "br0") != "0" {
		t.Errorf("after Sync with no pod: %d tables, route_localnet %s", len(tables), routeLocalnet(t, name, "br0"))
	}
	if err := fresh.Add(web); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if tables, _ := c.ListTables(); len(tables) != 0 || routeLocalnet(t, name, "br0") != "0" {
		t.Errorf("after Uninstall: %d tables, route_localnet %s", len(tables), routeLocalnet(t, name, "br0"))
	}
	testutil.Run(t, "ip", "-n", name, "link", "del", "br0")
	if err := fresh.Uninstall(); err != nil {
		t.Errorf("Uninstall with the interface gone: %v", err)
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// A Mapper that cannot turn route_localnet on (its interface is missing)
// fails Add, and leaves neither the pod's rules nor the table.
func TestMapper_LocalhostMissingInterface(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	name := "nrhp" + randHex(4)
	ns, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	m, err := hostport.New(hostport.WithNetNS(int(ns.Fd())), hostport.WithLocalhost("nrhp-none"))
	if err != nil {
		t.Fatal(err)
	}
	pod := hostport.Pod{PodRef: hostport.PodRef{ID: "web", Namespace: "default", Name: "web"}, Addrs: addrs("198.18.1.5"),
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80}}}
	err = m.Add(pod)
	if err == nil || !strings.Contains(err.Error(), "default/web") || !strings.Contains(err.Error(), "route_localnet of nrhp-none") {
		t.Fatalf("Add with a missing interface = %v; want an error naming the pod and route_localnet of the interface", err)
	}
	if got := comments(t, m); len(got) != 0 || m.Holds("web") {
		t.Errorf("after the failed Add: rules %q, holds %v", got, m.Holds("web"))
	}
}

func TestWithLocalhost(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []hostport.Option
		ok   bool
	}{
		{"an interface", []hostport.Option{hostport.WithLocalhost("nrinet0")}, true},
		{"empty", []hostport.Option{hostport.WithLocalhost("")}, false},
		{"too long", []hostport.Option{hostport.WithLocalhost("abcdefghijklmnop")}, false},
		{"a path", []hostport.Option{hostport.WithLocalhost("../all")}, false},
		{"twice", []hostport.Option{hostport.WithLocalhost("a"), hostport.WithLocalhost("b")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := hostport.New(tc.opts...); (err == nil) != tc.ok {
				t.Errorf("New = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
