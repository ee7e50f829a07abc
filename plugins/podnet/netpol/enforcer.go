package netpol

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Option configures an [Enforcer].
type Option func(*Enforcer) error

// WithNetNS makes the Enforcer work in the network namespace fd refers to
// (an open /var/run/netns/NAME or /proc/PID/ns/net) instead of the
// process's. The caller keeps fd open while the Enforcer is used.
func WithNetNS(fd int) Option {
	return func(e *Enforcer) error {
		if fd <= 0 {
			return fmt.Errorf("netpol: network namespace file descriptor %d is not valid", fd)
		}
		if e.netnsFD != 0 {
			return errors.New("netpol: WithNetNS given twice")
		}
		e.netnsFD = fd
		return nil
	}
}

// Enforcer keeps the table [TableName]: see the package documentation.
// Each Apply replaces the whole table in one nftables transaction, so a
// packet meets either the old rules or the new ones, never a mix and
// never none.
type Enforcer struct {
	netnsFD int
}

// New returns an Enforcer. It touches nothing until Apply or Uninstall.
func New(opts ...Option) (*Enforcer, error) {
	e := &Enforcer{}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// socketBuffer is the netlink socket's send and receive buffer: a whole
// table goes in one message (one transaction), and its acknowledgements
// come back at once; the defaults (net.core.wmem_max) refuse a cluster's
// table ("message too long").
const socketBuffer = 64 << 20

// bigBuffers sets the socket's buffers to socketBuffer, above the
// system's maximum (SO_SNDBUFFORCE, SO_RCVBUFFORCE: CAP_NET_ADMIN, which
// writing nftables needs anyway).
func bigBuffers(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer); serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer)
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("netpol: netlink socket buffers: %w", serr)
	}
	return nil
}

func (e *Enforcer) conn() (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(bigBuffers)}
	if e.netnsFD != 0 {
		opts = append(opts, nftables.WithNetNSFd(e.netnsFD))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("netpol: nftables: %w", err)
	}
	return c, nil
}

// setChunk is how many elements one netlink message adds to a set: a
// message's element list is one attribute, whose length is 16 bits (64
// KiB), so a large set is added in chunks, all in the same transaction.
// An interval's start and end (two elements) stay in one chunk.
const setChunk = 1000

// addSet adds the set with its elements, in chunks of setChunk.
func addSet(c *nftables.Conn, s *nftables.Set, elements []nftables.SetElement) error {
	first := min(len(elements), setChunk)
	if err := c.AddSet(s, elements[:first]); err != nil {
		return err
	}
	for i := first; i < len(elements); i += setChunk {
		if err := c.SetAddElements(s, elements[i:min(i+setChunk, len(elements))]); err != nil {
			return err
		}
	}
	return nil
}

// Stats are the sizes of what Apply wrote.
type Stats struct {
	// Pods are the local pods some policy isolates; Chains, Rules and
	// Sets what the table holds; Elements the addresses and intervals of
	// the sets and maps.
	Pods, Chains, Rules, Sets, Elements int
}

// Apply makes the table hold p, replacing what it held, in one
// transaction.
func (e *Enforcer) Apply(p *Program) (Stats, error) {
	rs, err := build(p)
	if err != nil {
		return Stats{}, err
	}
	c, err := e.conn()
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Pods: len(p.Pods)}
	t := table()
	c.AddTable(t) // so that the deletion below never fails
	c.DelTable(t)
	t = c.AddTable(t)
	accept := nftables.ChainPolicyAccept
	chains := map[string]*nftables.Chain{}
	for _, ch := range rs.chains {
		if ch.name == ChainForward {
			chains[ch.name] = c.AddChain(&nftables.Chain{Name: ch.name, Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		} else {
			chains[ch.name] = c.AddChain(&nftables.Chain{Name: ch.name, Table: t})
		}
	}
	st.Chains = len(chains)
	sets := map[string]*nftables.Set{}
	for _, s := range rs.sets {
		key := nftables.TypeIPAddr
		if s.v6 {
			key = nftables.TypeIP6Addr
		}
		set := &nftables.Set{Table: t, Name: s.name, KeyType: key, Interval: true}
		if err := addSet(c, set, s.elements); err != nil {
			return Stats{}, fmt.Errorf("netpol: set %s: %w", s.name, err)
		}
		sets[s.name] = set
		st.Sets++
		st.Elements += len(s.elements)
	}
	mapNames := make([]string, 0, len(rs.maps))
	for name := range rs.maps {
		mapNames = append(mapNames, name)
	}
	slices.Sort(mapNames)
	for _, name := range mapNames {
		key := nftables.TypeIPAddr
		if strings.HasSuffix(name, "-v6") {
			key = nftables.TypeIP6Addr
		}
		m := &nftables.Set{Table: t, Name: name, KeyType: key, DataType: nftables.TypeVerdict, IsMap: true}
		if err := addSet(c, m, rs.maps[name]); err != nil {
			return Stats{}, fmt.Errorf("netpol: map %s: %w", name, err)
		}
		sets[name] = m
		st.Sets++
		st.Elements += len(rs.maps[name])
	}
	for _, ch := range rs.chains {
		for _, r := range ch.rules {
			for _, x := range r.exprs {
				if l, ok := x.(*expr.Lookup); ok {
					s := sets[l.SetName]
					if s == nil {
						return Stats{}, fmt.Errorf("netpol: rule %q looks up set %s, which the program lacks", r.comment, l.SetName)
					}
					l.SetID = s.ID
				}
			}
			c.AddRule(r.nftRule(t, ch.name))
			st.Rules++
		}
	}
	if err := c.Flush(); err != nil {
		return Stats{}, fmt.Errorf("netpol: writing table %s (%d chains, %d rules, %d sets): %w", TableName, st.Chains, st.Rules, st.Sets, err)
	}
	return st, nil
}

// Uninstall removes the table, if it is there.
func (e *Enforcer) Uninstall() error {
	c, err := e.conn()
	if err != nil {
		return err
	}
	t := table()
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
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
