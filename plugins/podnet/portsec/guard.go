package portsec

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/plugins/podnet/internal/nsconn"
)

// Names of what the package owns.
const (
	// TablePrefix starts the name of the nftables table (family bridge)
	// the package owns for a bridge: see [TableName].
	TablePrefix = "nrinet-podnet-portsec-"
	// ChainPrerouting is the table's base chain: type filter, hook
	// prerouting, priority -300, policy accept.
	ChainPrerouting = "prerouting"
	// mapPorts maps a pod's host veth to a jump to its chain.
	mapPorts = "ports"
	// counterUnknown counts frames of ports with the guarded prefix and no
	// entry.
	counterUnknown = "unknown-port"
)

// Reason is why a frame was dropped: the name of its counter.
type Reason string

// The reasons, each a counter per pod.
const (
	ReasonMAC       Reason = "mac"         // Ethernet source is not the pod's MAC
	ReasonVLAN      Reason = "vlan"        // 802.1Q or 802.1ad tagged (VLAN ID 0 too)
	ReasonIPv4      Reason = "ipv4-source" // IPv4 source is not the pod's address
	ReasonARP       Reason = "arp"         // ARP sender is not the pod's MAC and IPv4 address
	ReasonIPv6      Reason = "ipv6-source" // IPv6 source is not the pod's, nor its link-local, nor :: for DAD or MLD
	ReasonRouter    Reason = "router"      // router advertisement or redirect (ICMP or ICMPv6)
	ReasonND        Reason = "nd"          // neighbour advertisement for an address not the pod's
	ReasonEtherType Reason = "ethertype"   // neither IPv4, ARP nor IPv6
)

// Reasons are all reasons, each a counter per pod.
var Reasons = []Reason{ReasonMAC, ReasonVLAN, ReasonRouter, ReasonND, ReasonIPv4, ReasonARP, ReasonIPv6, ReasonEtherType}

// Port is one pod's port: the host end of its veth, and who may send
// through it.
type Port struct {
	// ID is the pod's sandbox ID; Pod names it ("namespace/name") in
	// errors and metrics.
	ID, Pod string
	// Interface is the host veth, on the bridge.
	Interface string
	// MAC is the pod interface's address.
	MAC net.HardwareAddr
	// Addrs are the pod's addresses: at most one IPv4 and one IPv6
	// address, and with IPv6 its link-local address (fe80::/10).
	Addrs []netip.Addr
}

// LinkLocal is the EUI-64 IPv6 link-local address of mac (RFC 4291,
// appendix A), the one the kernel gives an interface with that MAC in
// address generation mode EUI-64: the link-local address a [Port] lets its
// pod send from.
func LinkLocal(mac net.HardwareAddr) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	a[8], a[9], a[10] = mac[0]^0x02, mac[1], mac[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(a)
}

func (p Port) validate() error {
	switch {
	case p.ID == "":
		return errors.New("portsec: a port without a pod ID")
	case p.Interface == "" || len(p.Interface) >= unix.IFNAMSIZ:
		return fmt.Errorf("portsec: pod %s: interface name %q: want 1 to %d bytes", p.name(), p.Interface, unix.IFNAMSIZ-1)
	case len(p.MAC) != 6 || p.MAC[0]&1 != 0:
		return fmt.Errorf("portsec: pod %s: MAC address %q: want a unicast Ethernet address", p.name(), p.MAC)
	}
	var v4, v6, ll int
	for _, a := range p.Addrs {
		switch {
		case a.Is4():
			v4++
		case a.Is6() && a.IsLinkLocalUnicast():
			ll++
		case a.Is6() && !a.Is4In6() && a.IsGlobalUnicast():
			v6++
		default:
			return fmt.Errorf("portsec: pod %s: address %s: want a unicast IPv4 or IPv6 address", p.name(), a)
		}
	}
	if v4 > 1 || v6 > 1 || ll > 1 {
		return fmt.Errorf("portsec: pod %s: addresses %v: at most one IPv4, one IPv6 and one link-local address", p.name(), p.Addrs)
	}
	return nil
}

func (p Port) name() string {
	if p.Pod != "" {
		return p.Pod
	}
	return p.ID
}

// Option configures a [Guard].
type Option func(*Guard) error

// WithNetNS makes the Guard work in the network namespace fd refers to
// instead of the process's; the caller keeps fd open while it is used.
func WithNetNS(fd int) Option {
	return func(g *Guard) error { return g.ns.Set("portsec", fd) }
}

// TableName is the name of the table that guards the ports of bridge:
// "nrinet-podnet-portsec-BRIDGE", so that each nri-podnet (one per bridge)
// owns its own.
func TableName(bridge string) string { return TablePrefix + bridge }

// Guard keeps the table [TableName] in line with the node's pod ports.
// Its methods may be called from several goroutines; each writes one
// nftables transaction under the Guard's lock (kernel work only).
type Guard struct {
	bridge string // whose ports are guarded
	prefix string // the host veth prefix whose unknown ports are dropped
	ns     nsconn.NetNS

	mu        sync.Mutex
	ports     map[string]Port // by pod ID
	installed bool            // the table is there, with its base chain
}

// New returns a Guard for the ports of bridge whose host veths are named
// with prefix: a port of the bridge with that prefix and without an entry
// drops every frame. It touches nothing until Add, Remove, Sync or
// Uninstall.
func New(bridge, prefix string, opts ...Option) (*Guard, error) {
	if bridge == "" || len(bridge) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("portsec: bridge name %q: want 1 to %d bytes", bridge, unix.IFNAMSIZ-1)
	}
	if prefix == "" || len(prefix) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("portsec: interface prefix %q: want 1 to %d bytes", prefix, unix.IFNAMSIZ-1)
	}
	g := &Guard{bridge: bridge, prefix: prefix, ports: map[string]Port{}}
	for _, o := range opts {
		if err := o(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Guard) conn() (*nftables.Conn, error) { return g.ns.NFTables("portsec") }

// Table names the table the Guard owns: "bridge nrinet-podnet-portsec-BRIDGE".
func (g *Guard) Table() string { return "bridge " + TableName(g.bridge) }

// Add guards p's port: its chain, counters and map entry, in one
// transaction (the whole table, if it is not there yet). Add again
// replaces the pod's entry and keeps its counters.
func (g *Guard) Add(p Port) error {
	if err := p.validate(); err != nil {
		return err
	}
	if !strings.HasPrefix(p.Interface, g.prefix) {
		return fmt.Errorf("portsec: pod %s: interface %q lacks the guarded prefix %q", p.name(), p.Interface, g.prefix)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if other, ok := g.portOf(p.Interface); ok && other.ID != p.ID {
		return fmt.Errorf("portsec: pod %s: interface %s is pod %s's", p.name(), p.Interface, other.name())
	}
	prev, had := g.ports[p.ID]
	g.ports[p.ID] = p
	var err error
	if !g.installed {
		err = g.replaceAllLocked()
	} else {
		err = g.writePodLocked(p, had && prev.Interface != p.Interface, prev)
	}
	if err != nil {
		if had {
			g.ports[p.ID] = prev
		} else {
			delete(g.ports, p.ID)
		}
		return fmt.Errorf("portsec: pod %s: %w", p.name(), err)
	}
	return nil
}

func (g *Guard) portOf(iface string) (Port, bool) {
	for _, p := range g.ports {
		if p.Interface == iface {
			return p, true
		}
	}
	return Port{}, false
}

// Remove takes the pod's chain, counters and map entry out, in one
// transaction; its interface, if it is still there, then drops every
// frame (an unknown port). With the last port the table goes. Remove of
// a pod without an entry is a no-op, and so is one whose table, or its
// part of it, someone else deleted: the Guard then forgets the pod, and
// its next Add writes the whole table again.
func (g *Guard) Remove(id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.ports[id]
	if !ok {
		return nil
	}
	c, err := g.conn()
	if err != nil {
		return err
	}
	t := g.table()
	if len(g.ports) == 1 {
		// The last port: the table goes (as it comes with the first).
		c.DelTable(t)
	} else {
		removePod(c, t, p)
	}
	err = c.Flush()
	if errors.Is(err, unix.ENOENT) {
		// The table, or the pod's part of it, went without us (nft
		// delete table, -uninstall): nothing of the pod is left, and the
		// next Add writes the whole table again.
		delete(g.ports, id)
		g.installed = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("portsec: pod %s: removing its port %s from bridge %s: %w", p.name(), p.Interface, TableName(g.bridge), err)
	}
	delete(g.ports, id)
	g.installed = len(g.ports) > 0
	return nil
}

// Sync makes the table hold exactly ports, replacing it in one
// transaction (so that no port is ever unguarded meanwhile; without
// ports there is no table), and the
// Guard hold them: what nri-podnet does at every (re)join with the live
// pods. Invalid ports are skipped, each with its error in skipped; their
// interfaces then drop every frame.
func (g *Guard) Sync(ports []Port) (skipped []error, err error) {
	held := make(map[string]Port, len(ports))
	for _, p := range ports {
		err := p.validate()
		if err == nil && !strings.HasPrefix(p.Interface, g.prefix) {
			err = fmt.Errorf("portsec: pod %s: interface %q lacks the guarded prefix %q", p.name(), p.Interface, g.prefix)
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		held[p.ID] = p
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	saved, savedInstalled := g.ports, g.installed
	g.ports = held
	if err := g.replaceAllLocked(); err != nil {
		g.ports, g.installed = saved, savedInstalled
		return skipped, err
	}
	return skipped, nil
}

// Uninstall deletes the table and forgets every port.
func (g *Guard) Uninstall() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, err := g.conn()
	if err != nil {
		return err
	}
	if err := nsconn.DeleteTable(c, g.table()); err != nil {
		return fmt.Errorf("portsec: deleting table bridge %s: %w", TableName(g.bridge), err)
	}
	g.ports, g.installed = map[string]Port{}, false
	return nil
}

// replaceAllLocked replaces the table with one that guards g.ports.
func (g *Guard) replaceAllLocked() error {
	c, err := g.conn()
	if err != nil {
		return err
	}
	t := g.table()
	c.AddTable(t)
	c.DelTable(t)
	if len(g.ports) == 0 {
		if err := c.Flush(); err != nil {
			return fmt.Errorf("deleting table bridge %s: %w", TableName(g.bridge), err)
		}
		g.installed = false
		return nil
	}
	ports := addBase(c, t, g.bridge, g.prefix)
	ids := make([]string, 0, len(g.ports))
	for id := range g.ports {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := addPod(c, ports, g.ports[id]); err != nil {
			return err
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("replacing table bridge %s (%d ports): %w", TableName(g.bridge), len(g.ports), err)
	}
	g.installed = true
	return nil
}

// writePodLocked writes one pod's port; moved says its interface changed
// from prev's.
func (g *Guard) writePodLocked(p Port, moved bool, prev Port) error {
	c, err := g.conn()
	if err != nil {
		return err
	}
	t := g.table()
	if moved {
		removePod(c, t, prev)
	}
	ports := &nftables.Set{Table: t, Name: mapPorts, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict, IsMap: true}
	if err := addPod(c, ports, p); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("writing port %s to table bridge %s: %w", p.Interface, TableName(g.bridge), err)
	}
	return nil
}

func (g *Guard) table() *nftables.Table {
	return &nftables.Table{Name: TableName(g.bridge), Family: nftables.TableFamilyBridge}
}

// counterName is the name of a pod port's counter for r.
func counterName(iface string, r Reason) string { return iface + "-" + string(r) }

// Drop is the count of one pod's frames dropped for one reason.
type Drop struct {
	ID, Pod string
	Reason  Reason
	Packets uint64
}

// Drops reads the drop counters of every guarded pod (a series per pod
// and reason, zeros included), sorted by pod and reason, and the frames
// of unknown ports (a host veth of the guarded prefix without an entry).
func (g *Guard) Drops() (drops []Drop, unknown uint64, err error) {
	g.mu.Lock()
	ports := make(map[string]Port, len(g.ports))
	for _, p := range g.ports {
		ports[p.Interface] = p
	}
	installed := g.installed
	g.mu.Unlock()
	if !installed {
		return nil, 0, nil
	}
	c, err := g.conn()
	if err != nil {
		return nil, 0, err
	}
	objs, err := c.GetObjects(g.table())
	if err != nil {
		return nil, 0, fmt.Errorf("portsec: reading the counters of table bridge %s: %w", TableName(g.bridge), err)
	}
	for _, o := range objs {
		co, ok := o.(*nftables.CounterObj)
		if !ok {
			continue
		}
		if co.Name == counterUnknown {
			unknown = co.Packets
			continue
		}
		for _, r := range Reasons {
			iface, ok := strings.CutSuffix(co.Name, "-"+string(r))
			if p, known := ports[iface]; ok && known {
				drops = append(drops, Drop{ID: p.ID, Pod: p.name(), Reason: r, Packets: co.Packets})
			}
		}
	}
	slices.SortFunc(drops, func(a, b Drop) int {
		return cmpOr(strings.Compare(a.Pod, b.Pod), strings.Compare(a.ID, b.ID),
			slices.Index(Reasons, a.Reason)-slices.Index(Reasons, b.Reason))
	})
	return drops, unknown, nil
}

func cmpOr(vs ...int) int {
	for _, v := range vs {
		if v != 0 {
			return v
		}
	}
	return 0
}

// Ports returns the IDs of the guarded pods, sorted.
func (g *Guard) Ports() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]string, 0, len(g.ports))
	for id := range g.ports {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Read returns the interfaces the table in the kernel has a chain for
// (the guarded ports), sorted; none without a table.
func (g *Guard) Read() ([]string, error) {
	c, err := g.conn()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyBridge)
	if err != nil {
		return nil, fmt.Errorf("portsec: listing the chains of bridge tables: %w", err)
	}
	var ports []string
	for _, ch := range chains {
		if ch.Table.Name == TableName(g.bridge) && ch.Hooknum == nil &&
			!strings.HasSuffix(ch.Name, suffixIPv4) && !strings.HasSuffix(ch.Name, suffixIPv6) && !strings.HasSuffix(ch.Name, suffixARP) {
			ports = append(ports, ch.Name)
		}
	}
	slices.Sort(ports)
	return ports, nil
}
