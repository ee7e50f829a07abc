package netpol

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// Option configures an [Enforcer].
type Option func(*Enforcer) error

// WithNetNS makes the Enforcer work in the network namespace fd refers to
// (an open /var/run/netns/NAME or /proc/PID/ns/net) instead of the
// process's. The caller keeps fd open while the Enforcer is used.
func WithNetNS(fd int) Option {
	return func(e *Enforcer) error { return e.ns.Set("netpol", fd) }
}

// Enforcer keeps the table [TableName]: see the package documentation.
// Each Sync changes the table in one nftables transaction, so a packet
// meets either the old rules or the new ones, never a mix and never none.
// The first Sync (and any after a failed one) replaces the whole table;
// the others change only the chains, sets and map elements that differ
// from the program before, and write nothing when nothing does.
type Enforcer struct {
	ns nsconn.NetNS
	// logDenied, if set, makes the table log denied packets
	// (WithLogDenied); logged and overruns are its DenyLog's counts.
	logDenied        *LogDenied
	logged, overruns atomic.Uint64

	mu sync.Mutex // guards prev and serialises Sync
	// prev is the ruleset in the kernel (as the last Sync wrote it); nil
	// when unknown: the next Sync writes the whole table.
	prev *ruleset
}

// New returns an Enforcer. It touches nothing until Sync or Uninstall.
func New(opts ...Option) (*Enforcer, error) {
	e := &Enforcer{}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Enforcer) conn() (*nftables.Conn, error) { return e.ns.NFTables("netpol") }

// Table names the table the Enforcer owns: "inet nrinet-podnet-netpol".
func (e *Enforcer) Table() string { return "inet " + TableName }

// setChunk is how many elements one netlink message adds to a set: a
// message's element list is one attribute, whose length is 16 bits (64
// KiB), so a large set is added in chunks, all in the same transaction.
// An interval's start and end (two elements) stay in one chunk.
const setChunk = 1000

// Stats are the sizes of the table an Sync left, and of its
// transaction.
type Stats struct {
	// Pods are the local pods some policy isolates; Chains, Rules and
	// Sets what the table holds; Elements the addresses and intervals of
	// the sets and maps.
	Pods, Chains, Rules, Sets, Elements int
	// Written is the size of the transaction: the rules, set and map
	// elements, chains and sets it added, flushed or deleted; 0 when the
	// table already held the program.
	Written int
	// Full: the transaction replaced the whole table.
	Full bool
}

// Sync makes the table hold p, in one transaction: the whole table when
// the Enforcer does not know what the kernel holds (its first Sync, or
// one after a failure), else what differs from the program of the last
// Sync. If changing the table fails (someone else changed it), Sync
// replaces it whole.
func (e *Enforcer) Sync(p *Program) (Stats, error) {
	rs, err := build(p, e.logDenied)
	if err != nil {
		return Stats{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := rs.stats(len(p.Pods))
	if e.prev != nil {
		n, err := e.writeDelta(e.prev, rs)
		if err == nil {
			e.prev = rs
			st.Written = n
			return st, nil
		}
		e.prev = nil
	}
	n, err := e.writeFull(rs)
	if err != nil {
		return Stats{}, fmt.Errorf("netpol: writing table %s (%d chains, %d rules, %d sets): %w", TableName, st.Chains, st.Rules, st.Sets, err)
	}
	e.prev = rs
	st.Written, st.Full = n, true
	return st, nil
}

// stats are the sizes of the table rs makes.
func (rs *ruleset) stats(pods int) Stats {
	st := Stats{Pods: pods, Chains: len(rs.chains), Sets: len(rs.sets) + len(rs.maps)}
	for _, ch := range rs.chains {
		st.Rules += len(ch.rules)
	}
	for _, s := range rs.sets {
		st.Elements += len(s.elements)
	}
	for _, m := range rs.maps {
		st.Elements += len(m)
	}
	return st
}

// batch is one transaction being built: the table, and the sets it
// knows (for the lookups of the rules it adds).
type batch struct {
	c       *nftables.Conn
	t       *nftables.Table
	sets    map[string]*nftables.Set
	written int
}

func (b *batch) addChain(name string) {
	if name == ChainForward {
		accept := nftables.ChainPolicyAccept
		b.c.AddChain(&nftables.Chain{Name: name, Table: b.t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	} else {
		b.c.AddChain(&nftables.Chain{Name: name, Table: b.t})
	}
	b.written++
}

// set returns the set (or map) name of the table, as the batch knows it.
func (b *batch) set(name string) *nftables.Set {
	if s := b.sets[name]; s != nil {
		return s
	}
	s := &nftables.Set{Table: b.t, Name: name, KeyType: nftables.TypeIPAddr}
	if strings.HasSuffix(name, "-v6") {
		s.KeyType = nftables.TypeIP6Addr
	}
	if isMap(name) {
		s.DataType, s.IsMap = nftables.TypeVerdict, true
	} else {
		s.Interval = true
	}
	b.sets[name] = s
	return s
}

// addSet adds the set (or map) with its elements, in chunks of setChunk.
func (b *batch) addSet(name string, elements []nftables.SetElement) error {
	s := b.set(name)
	first := min(len(elements), setChunk)
	if err := b.c.AddSet(s, elements[:first]); err != nil {
		return fmt.Errorf("netpol: set %s: %w", name, err)
	}
	b.written++
	return b.addElements(s, elements[first:])
}

func (b *batch) addElements(s *nftables.Set, elements []nftables.SetElement) error {
	for i := 0; i < len(elements); i += setChunk {
		if err := b.c.SetAddElements(s, elements[i:min(i+setChunk, len(elements))]); err != nil {
			return fmt.Errorf("netpol: set %s: %w", s.Name, err)
		}
	}
	b.written += len(elements)
	return nil
}

func (b *batch) deleteElements(s *nftables.Set, elements []nftables.SetElement) error {
	for i := 0; i < len(elements); i += setChunk {
		if err := b.c.SetDeleteElements(s, elements[i:min(i+setChunk, len(elements))]); err != nil {
			return fmt.Errorf("netpol: set %s: %w", s.Name, err)
		}
	}
	b.written += len(elements)
	return nil
}

// addRules adds the chain's rules, their lookups resolved to the sets the
// batch knows (a set the transaction adds is found by its ID, one the
// table holds by its name).
func (b *batch) addRules(ch *chainRules) error {
	for _, r := range ch.rules {
		for _, x := range r.exprs {
			if l, ok := x.(*expr.Lookup); ok {
				if s := b.sets[l.SetName]; s != nil {
					l.SetID = s.ID
				} else {
					return fmt.Errorf("netpol: rule %q looks up set %s, which the program lacks", r.comment, l.SetName)
				}
			}
		}
		b.c.AddRule(r.nftRule(b.t, ch.name))
		b.written++
	}
	return nil
}

// isMap reports whether name is one of the verdict maps'.
func isMap(name string) bool {
	switch name {
	case mapEgress4, mapEgress6, mapIngress4, mapIngress6:
		return true
	}
	return false
}

// writeFull replaces the table with rs in one transaction and returns its
// size.
func (e *Enforcer) writeFull(rs *ruleset) (int, error) {
	c, err := e.conn()
	if err != nil {
		return 0, err
	}
	t := table()
	c.AddTable(t) // so that the deletion below never fails
	c.DelTable(t)
	b := &batch{c: c, t: c.AddTable(t), sets: map[string]*nftables.Set{}}
	for _, ch := range rs.chains {
		b.addChain(ch.name)
	}
	for _, s := range rs.sets {
		if err := b.addSet(s.name, s.elements); err != nil {
			return 0, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rs.maps)) {
		if err := b.addSet(name, rs.maps[name]); err != nil {
			return 0, err
		}
	}
	b.addObjects(nil, rs)
	for _, ch := range rs.chains {
		if err := b.addRules(ch); err != nil {
			return 0, err
		}
	}
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return b.written, nil
}

// writeDelta changes the table from prev (what it holds) to next in one
// transaction, if they differ, and returns its size. In order: the new
// chains and named objects (counters); the new sets, and the changed ones
// flushed and filled again; the changed chains flushed and written again,
// and the new ones written; the maps' elements deleted and added; the
// chains, sets and named objects no longer used deleted (nothing refers
// to them by then).
func (e *Enforcer) writeDelta(prev, next *ruleset) (int, error) {
	c, err := e.conn()
	if err != nil {
		return 0, err
	}
	t := table()
	b := &batch{c: c, t: t, sets: map[string]*nftables.Set{}}
	// Every set of prev, known by name (the kernel finds them so).
	for _, s := range prev.sets {
		b.set(s.name)
	}
	for name := range prev.maps {
		b.set(name)
	}
	prevChains := make(map[string]*chainRules, len(prev.chains))
	for _, ch := range prev.chains {
		prevChains[ch.name] = ch
	}
	nextChains := make(map[string]bool, len(next.chains))
	for _, ch := range next.chains {
		nextChains[ch.name] = true
		if prevChains[ch.name] == nil {
			b.addChain(ch.name)
		}
	}
	b.addObjects(prev, next)
	prevSets := make(map[string][]nftables.SetElement, len(prev.sets))
	for _, s := range prev.sets {
		prevSets[s.name] = s.elements
	}
	nextSets := make(map[string]bool, len(next.sets))
	for _, s := range next.sets {
		nextSets[s.name] = true
		old, ok := prevSets[s.name]
		switch {
		case !ok:
			delete(b.sets, s.name)
			if err := b.addSet(s.name, s.elements); err != nil {
				return 0, err
			}
		case !sameElements(old, s.elements):
			set := b.set(s.name)
			del, add := intervalDelta(old, s.elements)
			if err := b.deleteElements(set, del); err != nil {
				return 0, err
			}
			if err := b.addElements(set, add); err != nil {
				return 0, err
			}
		}
	}
	for _, ch := range next.chains {
		old := prevChains[ch.name]
		switch {
		case old == nil:
		case old.key() == ch.key():
			continue
		default:
			c.FlushChain(&nftables.Chain{Name: ch.name, Table: t})
			b.written++
		}
		if err := b.addRules(ch); err != nil {
			return 0, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.maps)) {
		del, add := mapDelta(prev.maps[name], next.maps[name])
		set := b.set(name)
		if err := b.deleteElements(set, del); err != nil {
			return 0, err
		}
		if err := b.addElements(set, add); err != nil {
			return 0, err
		}
	}
	for _, ch := range prev.chains {
		if !nextChains[ch.name] {
			chain := &nftables.Chain{Name: ch.name, Table: t}
			c.FlushChain(chain)
			c.DelChain(chain)
			b.written++
		}
	}
	for _, s := range prev.sets {
		if !nextSets[s.name] {
			c.DelSet(b.set(s.name))
			b.written++
		}
	}
	b.deleteObjects(prev, next)
	if b.written == 0 {
		return 0, nil
	}
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return b.written, nil
}

// sameElements reports whether two element lists are the same, in order
// (build makes them in address order).
func sameElements(a, b []nftables.SetElement) bool {
	return slices.EqualFunc(a, b, func(x, y nftables.SetElement) bool {
		return x.IntervalEnd == y.IntervalEnd && bytes.Equal(x.Key, y.Key)
	})
}

// intervalDelta returns the elements of an interval set to delete and to
// add to go from prev to next: the intervals (a start and, unless it
// runs to the family's last address, an end element) of prev that next
// lacks, and those of next that prev lacks. An interval that grew or
// shrank is deleted and added again.
func intervalDelta(prev, next []nftables.SetElement) (del, add []nftables.SetElement) {
	was := intervals(prev)
	is := intervals(next)
	for k, iv := range was {
		if _, ok := is[k]; !ok {
			del = append(del, iv...)
		}
	}
	for k, iv := range is {
		if _, ok := was[k]; !ok {
			add = append(add, iv...)
		}
	}
	return del, add
}

// intervals splits an interval set's elements (as intervalElements makes
// them: each start followed by its end, if any) into intervals, by their
// start and end keys.
func intervals(elems []nftables.SetElement) map[string][]nftables.SetElement {
	out := make(map[string][]nftables.SetElement, len(elems)/2+1)
	for i := 0; i < len(elems); i++ {
		iv := elems[i : i+1]
		if i+1 < len(elems) && elems[i+1].IntervalEnd {
			iv = elems[i : i+2]
			i++
		}
		var k []byte
		for _, e := range iv {
			k = append(k, e.Key...)
		}
		out[string(k)] = iv
	}
	return out
}

// mapDelta returns the elements of a verdict map to delete and to add to
// go from prev to next: a key whose chain changed is deleted and added.
func mapDelta(prev, next []nftables.SetElement) (del, add []nftables.SetElement) {
	chain := func(e nftables.SetElement) string {
		if e.VerdictData == nil {
			return ""
		}
		return e.VerdictData.Chain
	}
	was := make(map[string]string, len(prev))
	for _, e := range prev {
		was[string(e.Key)] = chain(e)
	}
	is := make(map[string]bool, len(next))
	for _, e := range next {
		is[string(e.Key)] = true
		old, ok := was[string(e.Key)]
		if ok && old == chain(e) {
			continue
		}
		if ok {
			del = append(del, nftables.SetElement{Key: e.Key})
		}
		add = append(add, e)
	}
	for _, e := range prev {
		if !is[string(e.Key)] {
			del = append(del, nftables.SetElement{Key: e.Key})
		}
	}
	return del, add
}

// Uninstall removes the table, if it is there.
func (e *Enforcer) Uninstall() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Whatever happens, the table is no longer what the last Sync wrote:
	// the next Sync writes it whole.
	e.prev = nil
	c, err := e.conn()
	if err != nil {
		return err
	}
	if err := nsconn.DeleteTable(c, table()); err != nil {
		return fmt.Errorf("netpol: removing table %s: %w", TableName, err)
	}
	return nil
}

// TableRule is a rule of the table as the kernel holds it: its chain and
// comment.
type TableRule struct {
	Chain, Comment string
}

// Rules reads the table's rules back, in chain order; none without the
// table.
func (e *Enforcer) Rules() ([]TableRule, error) {
	c, err := e.conn()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("netpol: listing chains: %w", err)
	}
	var out []TableRule
	for _, ch := range chains {
		if ch.Table.Name != TableName {
			continue
		}
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return nil, fmt.Errorf("netpol: rules of chain %s: %w", ch.Name, err)
		}
		for _, r := range rules {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			out = append(out, TableRule{Chain: ch.Name, Comment: comment})
		}
	}
	return out, nil
}
