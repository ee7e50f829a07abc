package masq_test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openNS opens a namespace file for the test's duration.
func openNS(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func newMasquerader(t *testing.T, ns *os.File) *masq.Masquerader {
	t.Helper()
	m, err := masq.New(masq.WithNetNS(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nftConn(t *testing.T, ns *os.File) *nftables.Conn {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tableNames lists every table of every family in the namespace.
func tableNames(t *testing.T, c *nftables.Conn) []string {
	t.Helper()
	tables, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	slices.Sort(names)
	return names
}

func TestSyncAndRemoveInNetNS(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	name := "nrmq" + randHex(4)
	ns := openNS(t, testutil.NewNetNS(t, name))
	c := nftConn(t, ns)
	// A table of someone else's, which nothing here may touch.
	other := c.AddTable(&nftables.Table{Name: "other-" + name, Family: nftables.TableFamilyINet})
	c.AddChain(&nftables.Chain{Name: "postrouting", Table: other, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	m := newMasquerader(t, ns)

	pods := []netip.Prefix{netip.MustParsePrefix("198.18.1.0/24"), netip.MustParsePrefix("fd00:198:18:1::/64")}
	cluster := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:198:18::/60")}
	for i, wantChanged := range []bool{true, false} {
		changed, err := m.Sync(pods, cluster)
		if err != nil {
			t.Fatalf("Sync %d: %v", i, err)
		}
		if changed != wantChanged {
			t.Errorf("Sync %d: changed = %v, want %v", i, changed, wantChanged)
		}
	}
	if got, want := tableNames(t, c), []string{masq.TableName, "other-" + name}; !slices.Equal(got, want) {
		t.Errorf("tables = %q, want %q", got, want)
	}

	// The chain, read back through the library.
	tb := &nftables.Table{Name: masq.TableName, Family: nftables.TableFamilyINet}
	ch, err := c.ListChain(tb, masq.ChainName)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Type != nftables.ChainTypeNAT || *ch.Hooknum != *nftables.ChainHookPostrouting ||
		*ch.Priority != *nftables.ChainPriorityNATSource || *ch.Policy != nftables.ChainPolicyAccept {
		t.Errorf("chain: type %s hook %d priority %d policy %d; want nat postrouting 100 accept", ch.Type, *ch.Hooknum, *ch.Priority, *ch.Policy)
	}
	rules, err := c.GetRules(tb, ch)
	if err != nil {
		t.Fatal(err)
	}
	// What each rule matches and does: family, address offset, compared
	// value, and the verdict or masquerade.
	type match struct {
		proto   byte
		offset  uint32
		addr    string
		mask    int // prefix length; full length when no bitwise
		masqRet string
	}
	var got []match
	for _, r := range rules {
		var m match
		for _, e := range r.Exprs {
			switch e := e.(type) {
			case *expr.Cmp:
				if len(e.Data) == 1 {
					m.proto = e.Data[0]
				} else {
					a, _ := netip.AddrFromSlice(e.Data)
					m.addr = a.String()
				}
			case *expr.Payload:
				m.offset = e.Offset
				m.mask = int(e.Len) * 8
			case *expr.Bitwise:
				m.mask = 0
				for _, b := range e.Mask {
					for ; b != 0; b <<= 1 {
						m.mask++
					}
				}
			case *expr.Masq:
				m.masqRet = "masquerade"
			case *expr.Verdict:
				if e.Kind == expr.VerdictReturn {
					m.masqRet = "return"
				}
			}
		}
		got = append(got, m)
	}
	want := []match{
		{2, 16, "198.18.0.0", 16, "return"},          // ip daddr 198.18.0.0/16 return
		{10, 24, "fd00:198:18::", 60, "return"},      // ip6 daddr fd00:198:18::/60 return
		{2, 12, "198.18.1.0", 24, "masquerade"},      // ip saddr 198.18.1.0/24 masquerade
		{10, 8, "fd00:198:18:1::", 64, "masquerade"}, // ip6 saddr fd00:198:18:1::/64 masquerade
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n got %+v\nwant %+v", got, want)
	}
	comments, ok, err := m.Rules()
	if err != nil || !ok || len(comments) != 4 {
		t.Errorf("Rules() = %q, %v, %v; want 4 comments", comments, ok, err)
	}

	// A change of the cluster CIDRs replaces the rules.
	changed, err := m.Sync(pods, cluster[:1])
	if err != nil || !changed {
		t.Fatalf("Sync with IPv4 cluster CIDR only: changed %v, %v", changed, err)
	}
	if comments, _, _ := m.Rules(); len(comments) != 2 {
		t.Errorf("after the change: rules %q, want 2", comments)
	}

	// A rule added by hand to our chain is taken out by the next Sync.
	c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{&expr.Counter{}}})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if changed, err := m.Sync(pods, cluster[:1]); err != nil || !changed {
		t.Fatalf("Sync after a foreign rule: changed %v, %v; want true", changed, err)
	}
	if comments, _, _ := m.Rules(); len(comments) != 2 {
		t.Errorf("after the repair: rules %q, want 2", comments)
	}

	for i := range 2 {
		if err := m.Uninstall(); err != nil {
			t.Fatalf("Remove %d: %v", i, err)
		}
	}
	if got, want := tableNames(t, c), []string{"other-" + name}; !slices.Equal(got, want) {
		t.Errorf("after Remove: tables = %q, want %q", got, want)
	}
	if _, ok, err := m.Rules(); ok || err != nil {
		t.Errorf("after Remove: Rules ok=%v err=%v; want no table", ok, err)
	}
}

// inNS runs fn on a thread in the namespace at path; sockets it opens
// stay in that namespace.
func inNS(t *testing.T, path string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		t.Fatal(err)
	}
	fn()
	if err := netns.Set(orig); err != nil {
		panic("cannot return the thread to its namespace: " + err.Error())
	}
}

// TestMasqueradeTraffic routes a "pod" namespace through a "node" to an
// "outside" namespace and to a "peer" inside the cluster CIDRs, and reads
// the source address of a UDP datagram on arrival: the node's outgoing
// address outside when masquerading, the pod's own everywhere else.
func TestMasqueradeTraffic(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	pfx := "nrmq" + randHex(4)
	node, pod, out, peer := pfx+"-node", pfx+"-pod", pfx+"-out", pfx+"-peer"
	nodePath := testutil.NewNetNS(t, node)
	podPath := testutil.NewNetNS(t, pod)
	outPath := testutil.NewNetNS(t, out)
	peerPath := testutil.NewNetNS(t, peer)
	ip := func(args ...string) { t.Helper(); testutil.Run(t, "ip", args...) }
	ip("-n", node, "link", "set", "lo", "up")
	testutil.Run(t, "ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	// link joins the node to namespace ns: the node's end nodeIf has
	// addresses .1 and ::1 of the two prefixes, the other end eth0 has
	// .2 and ::2, with routes via the node only if withDefault.
	link := func(ns, nodeIf, v4, v6 string, withDefault bool) {
		ip("-n", node, "link", "add", nodeIf, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip("-n", node, "addr", "add", v4+"1/24", "dev", nodeIf)
		ip("-n", node, "addr", "add", v6+"1/64", "dev", nodeIf, "nodad")
		ip("-n", node, "link", "set", nodeIf, "up")
		ip("-n", ns, "addr", "add", v4+"2/24", "dev", "eth0")
		ip("-n", ns, "addr", "add", v6+"2/64", "dev", "eth0", "nodad")
		ip("-n", ns, "link", "set", "eth0", "up")
		ip("-n", ns, "link", "set", "lo", "up")
		if withDefault {
			ip("-n", ns, "route", "add", "default", "via", v4+"1")
			ip("-n", ns, "-6", "route", "add", "default", "via", v6+"1")
		}
	}
	link(pod, "vpod", "198.18.1.", "fd00:198:18:1::", true)
	link(peer, "vpeer", "198.18.2.", "fd00:198:18:2::", true) // a pod of another node: routes back
	link(out, "vout", "198.19.20.", "fd00:198:18:100::", false)

	pods := []netip.Prefix{netip.MustParsePrefix("198.18.1.0/24"), netip.MustParsePrefix("fd00:198:18:1::/64")}
	cluster := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:198:18::/60")}
	m := newMasquerader(t, openNS(t, nodePath))
	t.Cleanup(func() { m.Uninstall() })

	// seen sends one datagram from the pod to dst (port 4789 in the
	// namespace at dstPath) and returns the source the receiver saw.
	seen := func(dstPath, dst string) string {
		t.Helper()
		var rx net.PacketConn
		var err error
		inNS(t, dstPath, func() { rx, err = net.ListenPacket("udp", net.JoinHostPort(dst, "4789")) })
		if err != nil {
			t.Fatal(err)
		}
		defer rx.Close()
		var tx net.Conn
		inNS(t, podPath, func() { tx, err = net.Dial("udp", net.JoinHostPort(dst, "4789")) })
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Close()
		buf := make([]byte, 64)
		// Resend until one arrives: the first datagram may wait for
		// neighbour discovery, and is dropped if that takes long.
		for range 20 {
			if _, err := tx.Write([]byte("nrinet")); err != nil {
				t.Fatalf("sending to %s: %v", dst, err)
			}
			rx.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
			_, from, err := rx.ReadFrom(buf)
			if err == nil {
				return from.(*net.UDPAddr).AddrPort().Addr().Unmap().String()
			}
		}
		t.Fatalf("no datagram from the pod reached %s", dst)
		return ""
	}
	check := func(step, dstPath, dst, want string) {
		t.Helper()
		if got := seen(dstPath, dst); got != want {
			t.Errorf("%s: %s saw the pod's datagram from %s, want %s", step, dst, got, want)
		}
	}

	check("before Sync", outPath, "198.19.20.2", "198.18.1.2")
	check("before Sync", outPath, "fd00:198:18:100::2", "fd00:198:18:1::2")
	if _, err := m.Sync(pods, cluster); err != nil {
		t.Fatal(err)
	}
	check("masquerading", outPath, "198.19.20.2", "198.19.20.1")
	check("masquerading", outPath, "fd00:198:18:100::2", "fd00:198:18:100::1")
	check("masquerading", peerPath, "198.18.2.2", "198.18.1.2")
	check("masquerading", peerPath, "fd00:198:18:2::2", "fd00:198:18:1::2")
	// The outside has no route back to the pods: a ping gets its answer
	// only through the masquerade.
	if err := testutil.Ping(pod, "198.19.20.2"); err != nil {
		t.Errorf("ping to the outside while masquerading: %v", err)
	}

	if err := m.Uninstall(); err != nil {
		t.Fatal(err)
	}
	check("after Remove", outPath, "198.19.20.2", "198.18.1.2")
	if got := tableNames(t, nftConn(t, openNS(t, nodePath))); len(got) != 0 {
		t.Errorf("after Remove the node has tables %q, want none", got)
	}
}
