package netpol_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"go4.org/netipx"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// netnsFD creates a network namespace for the test and returns an open
// descriptor of it.
func netnsFD(t *testing.T, name string) int {
	t.Helper()
	f, err := os.Open(testutil.NewNetNS(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

// dumpTable is the table as the kernel in the namespace holds it: its
// chains with their rules (comment and expressions) and its sets and maps
// with their elements, sorted, as text.
func dumpTable(t *testing.T, fd int) string {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(fd))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chains {
		if ch.Table.Name != netpol.TableName {
			continue
		}
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "chain %s hook %v:", ch.Name, ch.Hooknum != nil)
		for _, r := range rules {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			fmt.Fprintf(&b, "\n  %s:", comment)
			for _, x := range r.Exprs {
				if l, ok := x.(*expr.Lookup); ok {
					c := *l
					c.SetID = 0
					x = &c
				}
				fmt.Fprintf(&b, " %T%+v", x, x)
			}
		}
		out = append(out, b.String())
	}
	sets, err := c.GetSets(&nftables.Table{Name: netpol.TableName, Family: nftables.TableFamilyINet})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		elems, err := c.GetSetElements(s)
		if err != nil {
			t.Fatal(err)
		}
		var es []string
		for _, e := range elems {
			v := ""
			if e.VerdictData != nil {
				v = " jump " + e.VerdictData.Chain
			}
			es = append(es, fmt.Sprintf("%x end=%v%s", e.Key, e.IntervalEnd, v))
		}
		slices.Sort(es)
		out = append(out, fmt.Sprintf("set %s map=%v interval=%v: %s", s.Name, s.IsMap, s.Interval, strings.Join(es, ", ")))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// randomProgram is a program over up to eight local pods, each isolated
// in no, one or both directions by rules with random peers (from a small
// pool of IPv4 and IPv6 addresses and prefixes) and ports.
func randomProgram(r *rand.Rand) *netpol.Program {
	pool := []string{"198.18.90.1", "198.18.90.2", "198.18.90.3", "198.18.91.0/28", "198.18.92.7", "fd00:198:18:90::1", "fd00:198:18:90::2", "fd00:198:18:91::/120"}
	p := &netpol.Program{}
	// The pods' IPv4 addresses move between them from one program to
	// the next; within one, each is a single pod's.
	v4 := r.Perm(9)
	for i := range 8 {
		if r.IntN(3) == 0 {
			continue // not isolated
		}
		pr := netpol.PodRules{
			Pod:      fmt.Sprintf("ns/p%d", i),
			IPs:      []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 80, byte(10 + v4[i])}), netip.MustParseAddr(fmt.Sprintf("fd00:198:18:80::%d", 10+i))},
			Policies: []string{"ns/pol"},
		}
		dir := func() *netpol.Direction {
			if r.IntN(3) == 0 {
				return nil
			}
			d := &netpol.Direction{}
			for range r.IntN(3) {
				rule := netpol.Rule{Policy: fmt.Sprintf("ns/pol%d", r.IntN(3))}
				if r.IntN(4) > 0 {
					var b netipx.IPSetBuilder
					for range 1 + r.IntN(4) {
						s := pool[r.IntN(len(pool))]
						if strings.Contains(s, "/") {
							b.AddPrefix(netip.MustParsePrefix(s))
						} else {
							b.Add(netip.MustParseAddr(s))
						}
					}
					set, err := b.IPSet()
					if err != nil {
						panic(err)
					}
					rule.Peers = set
				}
				for range r.IntN(3) {
					first := uint16(8000 + r.IntN(3))
					rule.Ports = append(rule.Ports, netpol.PortRange{Protocol: []netpol.Protocol{netpol.TCP, netpol.UDP, netpol.SCTP}[r.IntN(3)], First: first, Last: first + uint16(r.IntN(2))})
				}
				d.Rules = append(d.Rules, rule)
			}
			return d
		}
		pr.Ingress, pr.Egress = dir(), dir()
		if pr.Ingress == nil && pr.Egress == nil {
			continue
		}
		p.Pods = append(p.Pods, pr)
	}
	return p
}

// TestEnforcer_Changes: over a random sequence of programs, the table an
// Enforcer keeps by changing it is, after every Sync, the table a new
// Enforcer writes whole for the same program; applying a program again
// writes nothing.
func TestEnforcer_Changes(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	token := randHex(3)
	keptFD := netnsFD(t, "nrnd"+token+"a")
	kept, err := netpol.New(netpol.WithNetNS(keptFD))
	if err != nil {
		t.Fatal(err)
	}
	freshFD := netnsFD(t, "nrnd"+token+"b")
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	var full, changes int
	for step := range 80 {
		p := randomProgram(r)
		st, err := kept.Sync(p)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if st.Full {
			full++
		} else {
			changes++
		}
		fresh, err := netpol.New(netpol.WithNetNS(freshFD))
		if err != nil {
			t.Fatal(err)
		}
		fst, err := fresh.Sync(p)
		if err != nil {
			t.Fatalf("step %d, whole table: %v", step, err)
		}
		if !fst.Full {
			t.Fatalf("step %d: a new Enforcer's first Sync did not write the whole table", step)
		}
		got, want := dumpTable(t, keptFD), dumpTable(t, freshFD)
		if got != want {
			t.Fatalf("step %d: the table changed step by step differs from the table written whole\nchanged:\n%s\nwhole:\n%s", step, got, want)
		}
		if st, err := kept.Sync(p); err != nil || st.Written != 0 {
			t.Fatalf("step %d: the same program again: wrote %d objects, %v; want nothing", step, st.Written, err)
		}
	}
	if full != 1 {
		t.Errorf("%d of 80 Applys wrote the whole table, want only the first", full)
	}
	t.Logf("80 programs: %d written whole, %d by changes", full, changes)
}

// TestEnforcer_ChangedUnderfoot: when the table was deleted behind the
// Enforcer's back, the next change finds out and writes it whole.
func TestEnforcer_ChangedUnderfoot(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	fd := netnsFD(t, "nrnu"+randHex(3))
	e, err := netpol.New(netpol.WithNetNS(fd))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	p1 := randomProgram(r)
	// p2 differs from p1: one more pod, isolated for ingress.
	p2 := &netpol.Program{Pods: append(slices.Clone(p1.Pods), netpol.PodRules{
		Pod: "ns/zz", IPs: []netip.Addr{netip.MustParseAddr("198.18.81.1")}, Ingress: &netpol.Direction{}, Policies: []string{"ns/deny"},
	})}
	if _, err := e.Sync(p1); err != nil {
		t.Fatal(err)
	}
	other, err := netpol.New(netpol.WithNetNS(fd))
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Uninstall(); err != nil {
		t.Fatal(err)
	}
	st, err := e.Sync(p2)
	if err != nil {
		t.Fatalf("Sync after the table was deleted: %v", err)
	}
	if !st.Full {
		t.Errorf("Sync after the table was deleted: changed it (Full false), want it written whole")
	}
	freshFD := netnsFD(t, "nrnv"+randHex(3))
	fresh, err := netpol.New(netpol.WithNetNS(freshFD))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Sync(p2); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpTable(t, fd), dumpTable(t, freshFD); got != want {
		t.Errorf("table after the rewrite:\n%s\nwant:\n%s", got, want)
	}
}

// TestEnforcer_SyncAfterUninstall: an Sync after Uninstall writes the
// table again, even the program applied before.
func TestEnforcer_SyncAfterUninstall(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	fd := netnsFD(t, "nrnu"+randHex(4))
	e, err := netpol.New(netpol.WithNetNS(fd))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	p := randomProgram(r)
	for len(p.Pods) == 0 {
		p = randomProgram(r)
	}
	if _, err := e.Sync(p); err != nil {
		t.Fatal(err)
	}
	if err := e.Uninstall(); err != nil {
		t.Fatal(err)
	}
	st, err := e.Sync(p)
	if err != nil || !st.Full {
		t.Fatalf("Sync after Uninstall: %+v, %v; want the whole table written", st, err)
	}
	if dump := dumpTable(t, fd); dump == "" {
		t.Errorf("no table after Sync")
	}
}
