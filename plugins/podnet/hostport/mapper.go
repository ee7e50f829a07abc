package hostport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// Option configures a [Mapper].
type Option func(*Mapper) error

// WithNetNS makes the Mapper work in the network namespace fd refers to
// (an open /var/run/netns/NAME or /proc/PID/ns/net) instead of the
// process's. The caller keeps fd open while the Mapper is used.
func WithNetNS(fd int) Option {
	return func(m *Mapper) error { return m.ns.Set("hostport", fd) }
}

// Mapper keeps the table [TableName] in line with the mappings of the
// node's pods: see the package documentation. Its methods may be called
// from several goroutines, for different pods at once; calls for one pod
// must come one after the other, as the runtime's do.
type Mapper struct {
	ns        nsconn.NetNS
	localhost string // WithLocalhost's interface; "": none

	mu   sync.Mutex          // guards pods
	pods map[string]podEntry // by pod ID: the mappings in the table (or being written)

	// wmu guards the table and route_localnet: one write (read the
	// table, change it, set route_localnet) at a time, so that the last
	// pod's removal, which deletes the table, and another pod's Add never
	// interleave.
	wmu sync.Mutex
}

// podEntry is what a pod holds.
type podEntry struct {
	ref   PodRef
	binds []bind
}

// New returns a Mapper. It touches nothing until Add, Remove, Sync or
// Uninstall.
func New(opts ...Option) (*Mapper, error) {
	m := &Mapper{pods: map[string]podEntry{}}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Mapper) conn() (*nftables.Conn, error) { return m.ns.NFTables("hostport") }

// Table names the table the Mapper owns: "inet nrinet-podnet-hostport".
func (m *Mapper) Table() string { return "inet " + TableName }

// checkLocal returns a [*NotLocalError] for the first of binds whose host
// IP is not one of the node's addresses. *cache, if not nil, holds the
// node's addresses once read.
func (m *Mapper) checkLocal(pod PodRef, binds []bind, cache *[]netip.Addr) error {
	var local []netip.Addr
	if cache != nil {
		local = *cache
	}
	for _, b := range binds {
		if !b.dst.IsValid() {
			continue
		}
		if local == nil {
			var err error
			if local, err = m.localAddrs(); err != nil {
				return fmt.Errorf("hostport: pod %s: %w", pod, err)
			}
			if cache != nil {
				*cache = local
			}
		}
		if !slices.Contains(local, b.dst) {
			return &NotLocalError{Pod: pod, Mapping: b.m}
		}
	}
	return nil
}

// localAddrs lists the addresses of the Mapper's network namespace.
func (m *Mapper) localAddrs() ([]netip.Addr, error) {
	var addrs []netip.Addr
	err := m.inNetNS(func() error {
		var err error
		addrs, err = interfaceAddrs()
		return err
	})
	return addrs, err
}

// interfaceAddrs lists the addresses of the calling thread's network
// namespace.
func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the node's addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// conflict returns the conflict of binds (pod's) with what the other
// pods in held hold, if any.
func conflict(held map[string]podEntry, pod PodRef, binds []bind) error {
	for id, e := range held {
		if id == pod.ID {
			continue
		}
		for _, b := range binds {
			if i := slices.IndexFunc(e.binds, b.overlaps); i >= 0 {
				return &ConflictError{Pod: pod, Holder: e.ref, Wanted: b.m, Held: e.binds[i].m}
			}
		}
	}
	return nil
}

// Add publishes pod's mappings (those with a host port): it checks them,
// refuses them if another pod holds one of their host ports (a
// [*ConflictError]), and else writes their rules in one nftables
// transaction, which also takes out the rules the pod had (Add again
// replaces; it is idempotent). A pod without host ports that held none
// costs nothing. With [WithLocalhost], the table's guard and masquerade
// are written with the first host port, and route_localnet turned on
// after them. On an error nothing of the pod's call is left: it holds
// what it held before.
func (m *Mapper) Add(pod Pod) error {
	if err := checkID(pod.ID); err != nil {
		return err
	}
	binds, err := pod.binds()
	if err != nil {
		return err
	}
	if err := m.checkLocal(pod.PodRef, binds, nil); err != nil {
		return err
	}
	m.mu.Lock()
	prev, had := m.pods[pod.ID]
	if err := conflict(m.pods, pod.PodRef, binds); err != nil {
		m.mu.Unlock()
		return err
	}
	if len(binds) == 0 {
		delete(m.pods, pod.ID)
	} else {
		m.pods[pod.ID] = podEntry{ref: pod.PodRef, binds: binds}
	}
	m.mu.Unlock()
	if !had && len(binds) == 0 {
		return nil
	}
	if err := m.writePod(pod.ID, podRules(pod.ID, binds)); err != nil {
		// The rules may be written and route_localnet not: put back
		// what the pod held (nothing, if it held nothing).
		var before []rule
		if had {
			before = podRules(pod.ID, prev.binds)
		}
		if rerr := m.writePod(pod.ID, before); rerr != nil {
			err = errors.Join(err, fmt.Errorf("putting its rules back: %w", rerr))
		}
		m.mu.Lock()
		if had {
			m.pods[pod.ID] = prev
		} else {
			delete(m.pods, pod.ID)
		}
		m.mu.Unlock()
		return fmt.Errorf("hostport: pod %s: %w", pod.PodRef, err)
	}
	return nil
}

// Remove takes out the rules of the pod with that ID, in one nftables
// transaction, and forgets its mappings. The last pod's removal deletes
// the table, after turning route_localnet off ([WithLocalhost]). A pod
// that holds none costs nothing; Remove again is a no-op.
func (m *Mapper) Remove(id string) error {
	m.mu.Lock()
	e, ok := m.pods[id]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := m.writePod(id, nil); err != nil {
		return fmt.Errorf("hostport: pod %s: %w", e.ref, err)
	}
	m.mu.Lock()
	if cur, ok := m.pods[id]; ok && slices.Equal(cur.binds, e.binds) {
		delete(m.pods, id)
	}
	m.mu.Unlock()
	return nil
}

// writePod replaces the rules of pod id with rules (replacePodLocked)
// and, if the table stays, turns route_localnet on ([WithLocalhost]):
// after the guard is in.
func (m *Mapper) writePod(id string, rules []rule) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	kept, err := m.replacePodLocked(id, rules)
	if err != nil || !kept {
		return err
	}
	return m.localnet(true)
}

// replacePodLocked replaces the rules of pod id with rules in one
// transaction, creating the table and its chains if they are missing,
// and makes the table's own rules (localhostRules) what the Mapper's
// options say. When no pod is left with a rule, it deletes the table
// instead (replaceAllLocked). kept reports whether the table stays.
// m.wmu is held.
func (m *Mapper) replacePodLocked(id string, rules []rule) (kept bool, err error) {
	c, err := m.conn()
	if err != nil {
		return false, err
	}
	have, err := listRules(c)
	if err != nil {
		return false, err
	}
	var mine, own []*nftables.Rule
	others := false
	for _, r := range have {
		switch commentPod(comment(r)) {
		case id:
			mine = append(mine, r)
		case "":
			own = append(own, r)
		default:
			others = true
		}
	}
	if !others && len(rules) == 0 {
		// The last host port goes, and the table with it (or there is
		// none: nothing to take out).
		return false, m.replaceAllLocked(nil)
	}
	t := table()
	c.AddTable(t)
	for _, ch := range chains(t, m.localhost != "") {
		c.AddChain(ch)
	}
	want := m.tableRules()
	if !sameComments(own, want) {
		mine = append(mine, own...)
		rules = append(want, rules...)
	}
	for _, r := range mine {
		if err := c.DelRule(r); err != nil {
			return false, fmt.Errorf("deleting rule %d of inet %s %s: %w", r.Handle, TableName, r.Chain.Name, err)
		}
	}
	for _, r := range rules {
		c.AddRule(r.nftRule(t))
	}
	if err := c.Flush(); err != nil {
		return false, fmt.Errorf("replacing %d rules with %d in table inet %s: %w", len(mine), len(rules), TableName, err)
	}
	return true, nil
}

// tableRules are the rules the table holds besides the pods' while any
// pod has a host port: those of WithLocalhost, or none.
func (m *Mapper) tableRules() []rule {
	if m.localhost == "" {
		return nil
	}
	return localhostRules(m.localhost)
}

// sameComments reports whether have are want, by their comments, in
// order.
func sameComments(have []*nftables.Rule, want []rule) bool {
	return slices.EqualFunc(have, want, func(h *nftables.Rule, w rule) bool { return comment(h) == w.comment })
}

// Sync makes the table hold the rules of pods and nothing else, in one
// nftables transaction that replaces the whole table (or deletes it when
// no pod has a host port), and makes the Mapper hold their mappings: what
// nri-podnet does after a restart with the pods the runtime still has.
// A pod whose mappings are invalid, or conflict with those of a pod
// before it in the list, gets no rules: its error is in skipped, and the
// other pods' rules are written. err is the failure to write them; the
// Mapper then holds what it held before.
func (m *Mapper) Sync(pods []Pod) (skipped []error, err error) {
	held := map[string]podEntry{}
	var rules []rule
	var local []netip.Addr // read once, when a pod needs them
	for _, p := range pods {
		if err := checkID(p.ID); err != nil {
			skipped = append(skipped, err)
			continue
		}
		binds, err := p.binds()
		if err == nil {
			err = m.checkLocal(p.PodRef, binds, &local)
		}
		if err == nil {
			err = conflict(held, p.PodRef, binds)
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if len(binds) > 0 {
			held[p.ID] = podEntry{ref: p.PodRef, binds: binds}
			rules = append(rules, podRules(p.ID, binds)...)
		}
	}
	m.mu.Lock()
	saved := m.pods
	m.pods = held
	m.mu.Unlock()
	if err := m.writeAll(rules); err != nil {
		m.mu.Lock()
		m.pods = saved
		m.mu.Unlock()
		return skipped, err
	}
	return skipped, nil
}

// writeAll replaces the table with one that holds rules and the table's
// own (replaceAllLocked), then turns route_localnet on ([WithLocalhost]);
// with no rules it turns route_localnet off and deletes the table.
func (m *Mapper) writeAll(rules []rule) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if len(rules) == 0 {
		return m.replaceAllLocked(nil)
	}
	if err := m.replaceAllLocked(append(m.tableRules(), rules...)); err != nil {
		return err
	}
	return m.localnet(true)
}

// replaceAllLocked replaces the table with one that holds rules, or
// deletes it when there are none, in one transaction; before deleting
// it, it turns route_localnet off ([WithLocalhost]): never on without
// the guard. Sync and Uninstall replace everything: an Add or Remove
// running at the same time would be undone, and the runtime sends none
// while it synchronizes the plugin. m.wmu is held.
func (m *Mapper) replaceAllLocked(rules []rule) error {
	c, err := m.conn()
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		if err := m.localnet(false); err != nil {
			return err
		}
		if have, err := listRules(c); err != nil {
			return err
		} else if have == nil {
			return nil // no table, and none wanted
		}
	}
	t := table()
	c.AddTable(t) // so that the deletion below never fails
	c.DelTable(t)
	if len(rules) > 0 {
		c.AddTable(t)
		for _, ch := range chains(t, m.localhost != "") {
			c.AddChain(ch)
		}
		for _, r := range rules {
			c.AddRule(r.nftRule(t))
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("hostport: replacing table inet %s (%d rules): %w", TableName, len(rules), err)
	}
	return nil
}

// Uninstall turns route_localnet off ([WithLocalhost]; an interface that
// is gone is fine), deletes the table and forgets every mapping. An
// absent table is not an error.
func (m *Mapper) Uninstall() error {
	if err := m.writeAll(nil); err != nil {
		return err
	}
	m.mu.Lock()
	m.pods = map[string]podEntry{}
	m.mu.Unlock()
	return nil
}

// Rule is a rule of the table as [Mapper.Rules] reads it back.
type Rule struct {
	Chain   string // ChainGuard, ChainPrerouting, ChainOutput or ChainPostrouting
	Pod     string // the pod ID its comment names; "" for the rules of WithLocalhost
	Comment string // what it does, e.g. "nrinet-podnet-hostport pod=ID tcp *:8080 -> 198.18.0.5:80"
	// Packets is what the rule's counter counted.
	Packets uint64
}

// Rules reads the table's rules back from the kernel, chain by chain
// (guard, prerouting, output, postrouting), each in order. An absent
// table has none.
func (m *Mapper) Rules() ([]Rule, error) {
	c, err := m.conn()
	if err != nil {
		return nil, err
	}
	have, err := listRules(c)
	if err != nil {
		return nil, err
	}
	out := make([]Rule, 0, len(have))
	for _, r := range have {
		s := comment(r)
		out = append(out, Rule{Chain: r.Chain.Name, Pod: commentPod(s), Comment: s, Packets: packets(r)})
	}
	return out, nil
}

// Count is how many (protocol, family, destination) a pod's mappings are
// published on, for metrics: a mapping with an empty host IP of a
// dual-stack pod counts once per family.
type Count struct {
	Protocol Protocol
	Family   string // "ipv4" or "ipv6"
	N        int
}

// Counts lists what the pods hold, by protocol and family, sorted; a
// protocol and family that no mapping uses is left out.
func (m *Mapper) Counts() []Count {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := map[[2]string]int{}
	proto := map[string]Protocol{}
	for _, e := range m.pods {
		for _, b := range e.binds {
			n[[2]string{b.m.Protocol.String(), b.family()}]++
			proto[b.m.Protocol.String()] = b.m.Protocol
		}
	}
	out := make([]Count, 0, len(n))
	for k, v := range n {
		out = append(out, Count{Protocol: proto[k[0]], Family: k[1], N: v})
	}
	slices.SortFunc(out, func(a, b Count) int {
		if c := strings.Compare(a.Protocol.String(), b.Protocol.String()); c != 0 {
			return c
		}
		return strings.Compare(a.Family, b.Family)
	})
	return out
}

// Holds reports whether the pod with that ID holds mappings.
func (m *Mapper) Holds(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pods[id]
	return ok
}

// Holders lists the IDs of the pods that hold mappings, sorted.
func (m *Mapper) Holders() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.pods))
	for id := range m.pods {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// listRules reads the rules of the table's chains, the guard's whether
// the Mapper has one or not; nil (and no error) when the table is absent.
// A chain that is missing has none.
func listRules(c *nftables.Conn) ([]*nftables.Rule, error) {
	t := table()
	if _, err := c.ListTableOfFamily(TableName, nftables.TableFamilyINet); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, fmt.Errorf("hostport: reading table inet %s: %w", TableName, err)
	}
	out := []*nftables.Rule{}
	for _, ch := range chains(t, true) {
		rs, err := c.GetRules(t, ch)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("hostport: listing the rules of inet %s %s: %w", TableName, ch.Name, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

func comment(r *nftables.Rule) string {
	s, _ := userdata.GetString(r.UserData, userdata.TypeComment)
	return s
}

// packets is what the rule's counter counted (0 without one).
func packets(r *nftables.Rule) uint64 {
	for _, e := range r.Exprs {
		if c, ok := e.(*expr.Counter); ok {
			return c.Packets
		}
	}
	return 0
}

func checkID(id string) error {
	if id == "" || len(id) > maxPodIDLen || strings.ContainsAny(id, " \t\n") {
		return fmt.Errorf("%w: pod ID %q is empty, longer than %d bytes or has blanks", ErrInvalidMapping, id, maxPodIDLen)
	}
	return nil
}
