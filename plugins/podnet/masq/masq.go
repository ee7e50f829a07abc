package masq

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// Names of what the package owns.
const (
	// TableName is the nftables table (family inet) the package owns.
	TableName = "nrinet-podnet"
	// ChainName is the table's only chain: type nat, hook postrouting.
	ChainName = "postrouting"
	// commentPrefix starts the comment of every rule.
	commentPrefix = "nrinet-podnet: "
)

// ErrInvalidCIDR is wrapped by the errors of [ParseCIDRs] and
// [Masquerader.Sync] for a prefix that is not a network (host bits set)
// or not valid at all; the message quotes it.
var ErrInvalidCIDR = errors.New("masq: invalid CIDR")

// Option configures a [Masquerader].
type Option func(*Masquerader) error

// WithNetNS makes the Masquerader work in the network namespace fd refers
// to (an open /var/run/netns/NAME or /proc/PID/ns/net) instead of the
// process's. The caller keeps fd open while the Masquerader is used.
func WithNetNS(fd int) Option {
	return func(m *Masquerader) error { return m.ns.Set("masq", fd) }
}

// Masquerader keeps the table [TableName]: see the package documentation.
// Its methods may be called from several goroutines; nftables
// transactions keep each change whole.
type Masquerader struct {
	ns nsconn.NetNS
}

// New returns a Masquerader. It touches nothing until Sync or Uninstall.
func New(opts ...Option) (*Masquerader, error) {
	m := &Masquerader{}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Masquerader) conn() (*nftables.Conn, error) { return m.ns.NFTables("masq") }

// Table names the table the Masquerader owns: "inet nrinet-podnet".
func (m *Masquerader) Table() string { return "inet " + TableName }

func table() *nftables.Table {
	return &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
}

func chain(t *nftables.Table) *nftables.Chain {
	accept := nftables.ChainPolicyAccept
	return &nftables.Chain{
		Name:     ChainName,
		Table:    t,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
		Policy:   &accept,
	}
}

// Sync makes the table hold the masquerade rules for podCIDRs (this
// node's) and clusterCIDRs (the whole cluster's), both families at once,
// as the package documentation describes. It reports whether it changed
// anything. With no rule to hold (no family has both a pod CIDR and a
// cluster CIDR) the table is still made, empty of rules, so that its
// presence says the masquerade is managed; use Uninstall for none.
func (m *Masquerader) Sync(podCIDRs, clusterCIDRs []netip.Prefix) (bool, error) {
	rules, err := plan(podCIDRs, clusterCIDRs)
	if err != nil {
		return false, err
	}
	want := make([]string, len(rules))
	for i, r := range rules {
		want[i] = r.comment
	}
	c, err := m.conn()
	if err != nil {
		return false, err
	}
	have, ok, err := current(c)
	if err != nil {
		return false, err
	}
	if ok && slices.Equal(have, want) {
		return false, nil
	}
	t := table()
	c.AddTable(t) // so that the deletion below never fails
	c.DelTable(t)
	c.AddTable(t)
	ch := c.AddChain(chain(t))
	for _, r := range rules {
		c.AddRule(&nftables.Rule{
			Table:    t,
			Chain:    ch,
			Exprs:    r.exprs(),
			UserData: userdata.AppendString(nil, userdata.TypeComment, r.comment),
		})
	}
	if err := c.Flush(); err != nil {
		return false, fmt.Errorf("masq: replacing table inet %s (%d rules): %w", TableName, len(rules), err)
	}
	return true, nil
}

// Uninstall deletes the table and everything in it. An absent table is
// not an error.
func (m *Masquerader) Uninstall() error {
	c, err := m.conn()
	if err != nil {
		return err
	}
	if err := nsconn.DeleteTable(c, table()); err != nil {
		return fmt.Errorf("masq: deleting table inet %s: %w", TableName, err)
	}
	return nil
}

// Rules lists the comments of the rules in the chain, in order: what
// each rule does, as the package documentation describes. It returns
// ok=false when the table or its chain is absent (or the chain is not the
// nat postrouting chain the package makes).
func (m *Masquerader) Rules() (comments []string, ok bool, err error) {
	c, err := m.conn()
	if err != nil {
		return nil, false, err
	}
	return current(c)
}

// current reads the rule comments of our chain; ok=false if the table or
// the chain is missing or the chain is not the one we make.
func current(c *nftables.Conn) ([]string, bool, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, false, fmt.Errorf("masq: listing inet tables: %w", err)
	}
	if !slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == TableName }) {
		return nil, false, nil
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, false, fmt.Errorf("masq: listing inet chains: %w", err)
	}
	want := chain(table())
	var found bool
	for _, ch := range chains {
		if ch.Table == nil || ch.Table.Name != TableName {
			continue
		}
		if ch.Name != ChainName || ch.Type != want.Type || ch.Hooknum == nil || *ch.Hooknum != *want.Hooknum ||
			ch.Priority == nil || *ch.Priority != *want.Priority {
			return nil, false, nil // a chain we do not make: replace the table
		}
		found = true
	}
	if !found {
		return nil, false, nil
	}
	rules, err := c.GetRules(table(), want)
	if err != nil {
		return nil, false, fmt.Errorf("masq: listing the rules of inet %s %s: %w", TableName, ChainName, err)
	}
	comments := make([]string, 0, len(rules))
	for _, r := range rules {
		s, _ := userdata.GetString(r.UserData, userdata.TypeComment)
		comments = append(comments, s)
	}
	return comments, true, nil
}

// rule is one rule of the chain: for packets of the family whose address
// (destination, or source) is in prefix, return or masquerade.
type rule struct {
	prefix     netip.Prefix
	masquerade bool // else return; masquerade matches the source
	comment    string
}

// plan computes the rules for the CIDRs, returns first.
func plan(podCIDRs, clusterCIDRs []netip.Prefix) ([]rule, error) {
	for _, p := range podCIDRs {
		if err := checkCIDR("pod", p); err != nil {
			return nil, err
		}
	}
	for _, p := range clusterCIDRs {
		if err := checkCIDR("cluster", p); err != nil {
			return nil, err
		}
	}
	var returns, masqs []rule
	for _, v4 := range []bool{true, false} {
		fam := func(p netip.Prefix) bool { return p.Addr().Is4() != v4 }
		pods := slices.DeleteFunc(slices.Clone(podCIDRs), fam)
		cluster := slices.DeleteFunc(slices.Clone(clusterCIDRs), fam)
		if len(pods) == 0 || len(cluster) == 0 {
			continue
		}
		for _, p := range outermost(cluster, pods) {
			kind := "cluster CIDR"
			if !slices.Contains(cluster, p) {
				kind = "pod CIDR"
			}
			returns = append(returns, rule{prefix: p, comment: commentPrefix + "to " + kind + " " + p.String() + ": not masqueraded"})
		}
		slices.SortFunc(pods, comparePrefix)
		for _, p := range slices.Compact(pods) {
			masqs = append(masqs, rule{prefix: p, masquerade: true, comment: commentPrefix + "from pod CIDR " + p.String() + " to outside the cluster: masquerade"})
		}
	}
	return append(returns, masqs...), nil
}

// outermost returns the prefixes of both lists that no other one
// contains, sorted and without duplicates; on a tie the first list's
// entry is kept.
func outermost(first, second []netip.Prefix) []netip.Prefix {
	all := append(slices.Clone(first), second...)
	var out []netip.Prefix
	for i, p := range all {
		inner := false
		for j, q := range all {
			if i != j && q.Bits() <= p.Bits() && q.Contains(p.Addr()) && (q.Bits() < p.Bits() || j < i) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

func checkCIDR(kind string, p netip.Prefix) error {
	if !p.IsValid() {
		return fmt.Errorf("%w: %s CIDR %q", ErrInvalidCIDR, kind, p.String())
	}
	if p.Masked() != p {
		return fmt.Errorf("%w: %s CIDR %s has host bits set (the network is %s)", ErrInvalidCIDR, kind, p, p.Masked())
	}
	if p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return fmt.Errorf("%w: %s CIDR %s is an IPv4-mapped or zoned address", ErrInvalidCIDR, kind, p)
	}
	return nil
}

// exprs builds the rule's expressions:
//
//	meta nfproto ipv4|ipv6 ip[6] daddr PREFIX return
//	meta nfproto ipv4|ipv6 ip[6] saddr PREFIX counter masquerade
func (r rule) exprs() []expr.Any {
	proto, off, n := byte(unix.NFPROTO_IPV4), uint32(16), uint32(4) // IPv4 daddr
	if r.prefix.Addr().Is6() {
		proto, off, n = unix.NFPROTO_IPV6, 24, 16 // IPv6 daddr
	}
	if r.masquerade {
		off -= n // the source address comes right before the destination
	}
	e := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
	}
	if r.prefix.Bits() < int(n*8) {
		mask := make([]byte, n)
		for i := range r.prefix.Bits() {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		e = append(e, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)})
	}
	e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: r.prefix.Addr().AsSlice()})
	if r.masquerade {
		return append(e, &expr.Counter{}, &expr.Masq{})
	}
	return append(e, &expr.Verdict{Kind: expr.VerdictReturn})
}

// ParseCIDRs parses a comma-separated list of network prefixes (the
// -cluster-cidr flag), such as "198.18.0.0/15,fd00:198:18::/48". Blanks
// around entries are ignored; an empty string gives none. A prefix with
// host bits set is an error naming it.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCIDR, f, err)
		}
		if err := checkCIDR("cluster", p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
