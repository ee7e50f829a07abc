package multinet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/internal/keylock"
	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// Manager attaches secondary interfaces to pods and detaches them. It
// owns one allocator per network that has subnets, and the records of
// who has which interface. Calls for different owners run concurrently;
// those for one owner in turn.
type Manager struct {
	log    *slog.Logger
	dir    string
	noSync bool
	host   netns.NsHandle  // the host namespace
	hh     *netlink.Handle // route netlink in it
	nets   map[string]*network
	order  []string                  // network names in configuration order
	guards map[string]*portsec.Guard // port security, by bridge (bridge networks)
	owners keylock.Locks

	mu     sync.Mutex        // guards the fields below
	taken  map[string]string // host interface (host networks) → owner
	closed bool
}

// network is a configured network, ready.
type network struct {
	Network
	alloc    *ipam.Allocator // nil: no subnets
	guard    *portsec.Guard  // its bridge's port security (bridge networks); nil for others
	gateways []netip.Prefix
	routes   []netip.Prefix
}

// New opens the networks' allocators under cfg.StateDir (mode 0700),
// creates the bridges of bridge networks that are missing (with their
// gateways, up), reads the records left by an earlier process, and makes
// each bridge's port security table guard exactly the recorded
// interfaces on it (see [Manager.Attach]).
// It checks no master or host interface: those may come later, and an
// attach that needs a missing one fails naming it.
func New(cfg Config, opts ...Option) (*Manager, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.hostPath == "" {
		o.hostPath = "/proc/self/ns/net"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, recordDir), 0o700); err != nil {
		return nil, fmt.Errorf("multinet: state directory: %w", err)
	}
	host, err := netns.GetFromPath(o.hostPath)
	if err != nil {
		return nil, fmt.Errorf("multinet: host network namespace %s: %w", o.hostPath, err)
	}
	hh, err := netlink.NewHandleAt(host, unix.NETLINK_ROUTE)
	if err != nil {
		host.Close()
		return nil, fmt.Errorf("multinet: netlink in %s: %w", o.hostPath, err)
	}
	m := &Manager{
		log: o.log, dir: cfg.StateDir, noSync: o.noSync, host: host, hh: hh,
		nets: map[string]*network{}, taken: map[string]string{}, guards: map[string]*portsec.Guard{},
	}
	for _, n := range cfg.Networks {
		if err := m.open(n); err != nil {
			m.Close()
			return nil, err
		}
	}
	recs, err := m.records()
	if err != nil {
		m.Close()
		return nil, err
	}
	for _, rec := range recs {
		for _, itf := range rec.Interfaces {
			if itf.Kind == KindHost {
				m.taken[itf.HostName] = rec.Owner
			}
		}
	}
	// Before any Attach: a guard that held only its first new port
	// would replace the table without the live ones.
	if err := m.syncGuards(recs); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// open readies one network.
func (m *Manager) open(n Network) error {
	nw := &network{Network: n}
	nw.routes, _ = n.routes() // validated
	if len(n.Subnets) > 0 {
		icfg, _ := n.ipamConfig() // validated
		opts := []ipam.Option{ipam.WithLogger(m.log)}
		if m.noSync {
			opts = append(opts, ipam.WithNoSync())
		}
		alloc, err := ipam.Open(filepath.Join(m.dir, "network-"+n.Name+".db"), icfg, opts...)
		if err != nil {
			return fmt.Errorf("multinet: network %q: %w", n.Name, err)
		}
		nw.alloc, nw.gateways = alloc, alloc.Gateways()
	}
	m.nets[n.Name], m.order = nw, append(m.order, n.Name)
	if n.Kind == KindBridge {
		if err := m.ensureBridge(nw); err != nil {
			return fmt.Errorf("multinet: network %q: %w", n.Name, err)
		}
		g, err := m.openGuard(n.Bridge)
		if err != nil {
			return fmt.Errorf("multinet: network %q: %w", n.Name, err)
		}
		nw.guard = g
	}
	return nil
}

// Networks returns the configured networks, in configuration order.
func (m *Manager) Networks() []Network {
	out := make([]Network, 0, len(m.order))
	for _, name := range m.order {
		out = append(out, m.nets[name].Network)
	}
	return out
}

// Close closes the allocators and the host namespace; interfaces, and
// the port security tables that guard them, stay.
// A second Close does nothing.
func (m *Manager) Close() error {
	m.mu.Lock()
	was := m.closed
	m.closed = true
	m.mu.Unlock()
	if was {
		return nil
	}
	var errs []error
	for _, n := range m.nets {
		if n.alloc != nil {
			errs = append(errs, n.alloc.Close())
		}
	}
	m.hh.Close()
	m.host.Close()
	return errors.Join(errs...)
}

// Request asks for one secondary interface.
type Request struct {
	// Claim names who asked ("namespace/name" of a ResourceClaim), for
	// errors and the record.
	Claim string
	// Network is the configured network's name.
	Network string
	// IfName is the interface's name in the pod (net1, ...).
	IfName string
	// Ref is the caller's, kept with the interface (the DRA driver's
	// device of the claim).
	Ref string
}

// Pod names the pod whose sandbox asks for interfaces, as the runtime
// gives it: what a source of requests needs to find the pod's claims.
type Pod struct {
	Namespace, Name, UID string
}

// String is the pod's namespace/name, or "" for a zero Pod.
func (p Pod) String() string {
	if p.Namespace == "" && p.Name == "" {
		return ""
	}
	return p.Namespace + "/" + p.Name
}

// Attach gives the pod (owner, network namespace at netnsPath) one
// interface per request, all or nothing: if one fails, every interface
// of the call is undone (addresses released, links deleted, host
// interfaces back on the host under their names) and the error, a
// [*RequestError] naming the claim and interface, says why. owner (the
// pod sandbox's ID) keys the record and the addresses (owner/IfName in
// each allocator); it may hold no slash. An owner that has interfaces
// already gets them back if it asks for the same ones (a repeated call);
// asking for others is an error. forPod names the pod in port security's
// counters ([Manager.PortDrops]) and logs; its UID is not used.
//
// An interface of a bridge network is guarded (package portsec, table
// bridge nrinet-podnet-portsec-BRIDGE) before its veth is made: its
// host end, in the bridge's interface group from the start, passes only
// frames from the interface's MAC and addresses (with IPv6 its EUI-64
// link-local address), and no router advertisement or redirect. Undo and
// Detach take its entry out.
func (m *Manager) Attach(ctx context.Context, owner string, forPod Pod, netnsPath string, reqs []Request) ([]Interface, error) {
	if !ownerOK(owner) {
		return nil, fmt.Errorf("multinet: owner %q: empty, over 200 bytes, or with a slash", owner)
	}
	if err := m.check(netnsPath, reqs); err != nil {
		return nil, err
	}
	defer m.owners.Lock(owner)()
	if rec, ok, err := m.readRecord(owner); err != nil {
		return nil, err
	} else if ok {
		return m.repeated(owner, rec, reqs)
	}
	pod, err := openNS(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("multinet: %s: %w", owner, err)
	}
	defer pod.Close()

	rec := record{Owner: owner, Pod: forPod.String(), NetNS: netnsPath}
	fail := func(req Request, err error) ([]Interface, error) {
		if derr := m.undo(ctx, rec, pod); derr != nil {
			m.log.Warn("undoing a failed attach", "owner", owner, "error", derr)
			err = errors.Join(err, derr)
		}
		return nil, &RequestError{Claim: req.Claim, IfName: req.IfName, Err: err}
	}
	// Plan every interface (names, MACs, addresses, host interfaces
	// taken) and write the record before the first link is made: a
	// process killed from here on leaves a record to undo.
	for _, req := range reqs {
		itf, err := m.plan(ctx, owner, req)
		if itf.Name != "" {
			rec.Interfaces = append(rec.Interfaces, itf)
		}
		if err != nil {
			return fail(req, err)
		}
	}
	if err := m.writeRecord(rec); err != nil {
		return fail(reqs[0], err)
	}
	for i, req := range reqs {
		n, itf := m.nets[req.Network], rec.Interfaces[i]
		if n.guard != nil {
			if err := n.guard.Add(port(rec, itf)); err != nil {
				return fail(req, fmt.Errorf("multinet: network %q: port security: %w", n.Name, err))
			}
		}
		if err := m.create(pod, n, itf); err != nil {
			return fail(req, err)
		}
	}
	return slices.Clone(rec.Interfaces), nil
}

// check refuses what no attach could do, before anything is done.
func (m *Manager) check(netnsPath string, reqs []Request) error {
	seen := map[string]bool{}
	for _, req := range reqs {
		var err error
		switch {
		case netnsPath == "":
			err = ErrHostNetwork
		case m.nets[req.Network] == nil:
			err = &UnknownNetworkError{Network: req.Network}
		case !ifNameOK(req.IfName) || req.IfName == "lo" || req.IfName == "eth0":
			err = fmt.Errorf("multinet: interface name %q is not valid (or is lo or eth0)", req.IfName)
		case seen[req.IfName]:
			err = fmt.Errorf("multinet: interface name %q asked for twice", req.IfName)
		}
		if err != nil {
			return &RequestError{Claim: req.Claim, IfName: req.IfName, Err: err}
		}
		seen[req.IfName] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

// repeated answers an Attach for an owner that has interfaces.
func (m *Manager) repeated(owner string, rec record, reqs []Request) ([]Interface, error) {
	same := len(rec.Interfaces) == len(reqs)
	for i := 0; same && i < len(reqs); i++ {
		itf := rec.Interfaces[i]
		same = itf.Claim == reqs[i].Claim && itf.Ref == reqs[i].Ref && itf.Network == reqs[i].Network && itf.Name == reqs[i].IfName
	}
	if !same {
		return nil, fmt.Errorf("multinet: %s has other secondary interfaces already; detach them first", owner)
	}
	return slices.Clone(rec.Interfaces), nil
}

// addrOwner is the allocator's owner of an interface's addresses.
func addrOwner(owner, ifName string) string { return owner + "/" + ifName }

// plan decides one interface: its MAC and MTU, its addresses (allocated
// now), the host interface it takes. An interface returned with a name
// holds something (addresses, a host interface) that undo gives back,
// even with an error.
func (m *Manager) plan(ctx context.Context, owner string, req Request) (Interface, error) {
	n := m.nets[req.Network]
	itf := Interface{Claim: req.Claim, Ref: req.Ref, Network: n.Name, Kind: n.Kind, MTU: n.MTU}
	switch n.Kind {
	case KindBridge:
		itf.MAC, itf.HostName = ifMAC(owner, req.IfName).String(), hostVethName(owner, req.IfName)
		if itf.MTU == 0 {
			itf.MTU = defaultMTU
		}
	case KindMacvlan:
		itf.MAC = ifMAC(owner, req.IfName).String()
	case KindHost:
		link, err := m.hh.LinkByName(n.Interface)
		m.mu.Lock()
		holder, held := m.taken[n.Interface]
		if err == nil && !held {
			m.taken[n.Interface] = owner
		}
		m.mu.Unlock()
		if held || err != nil {
			var nf netlink.LinkNotFoundError
			if err != nil && !errors.As(err, &nf) {
				return itf, fmt.Errorf("multinet: network %q: host interface %q: %w", n.Name, n.Interface, err)
			}
			return itf, &HostInterfaceTakenError{Network: n.Name, Interface: n.Interface, Owner: holder}
		}
		itf.MAC, itf.HostName = link.Attrs().HardwareAddr.String(), n.Interface
		if itf.MTU == 0 {
			itf.MTU = link.Attrs().MTU
		}
	}
	itf.Name = req.IfName
	if n.alloc != nil {
		addrs, err := n.alloc.Allocate(ctx, addrOwner(owner, req.IfName))
		if err != nil {
			return itf, fmt.Errorf("multinet: network %q: %w", n.Name, err)
		}
		itf.Addrs = addrs
	}
	return itf, nil
}

// Detach undoes every secondary interface of owner, whose network
// namespace is at netnsPath ("": the one it had at attach, if that is
// still there; a missing one: gone already): the links are
// deleted (a veth through its host end, a macvlan in the pod), a host
// interface is moved back to the host under its own name (found in the
// pod by name and MAC, or, if the namespace is gone and the kernel
// returned it, on the host by MAC), the addresses are released, and the
// record removed. An owner without interfaces is fine. If a step fails,
// the record stays, with what is left to undo, and the error says what.
func (m *Manager) Detach(ctx context.Context, owner, netnsPath string) error {
	if !ownerOK(owner) {
		return fmt.Errorf("multinet: owner %q: empty, over 200 bytes, or with a slash", owner)
	}
	defer m.owners.Lock(owner)()
	rec, ok, err := m.readRecord(owner)
	if err != nil || !ok {
		return err
	}
	if netnsPath == "" {
		netnsPath = rec.NetNS
	}
	var pod *podNS
	if netnsPath != "" {
		if p, err := openNS(netnsPath); err == nil {
			pod = p
			defer pod.Close()
		}
	}
	return m.undo(ctx, rec, pod)
}

// undo gives back everything rec holds; pod is nil if its namespace is
// gone.
func (m *Manager) undo(ctx context.Context, rec record, pod *podNS) error {
	var left []Interface
	var errs []error
	for _, itf := range slices.Backward(rec.Interfaces) {
		if err := m.remove(ctx, rec.Owner, pod, itf); err != nil {
			errs = append(errs, fmt.Errorf("claim %s (%s): %w", itf.Claim, itf.Name, err))
			left = append(left, itf)
		}
	}
	if len(errs) > 0 {
		slices.Reverse(left)
		rec.Interfaces = left
		if err := m.writeRecord(rec); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return m.removeRecord(rec.Owner)
}

// remove undoes one interface.
func (m *Manager) remove(ctx context.Context, owner string, pod *podNS, itf Interface) error {
	n := m.nets[itf.Network]
	var err error
	switch itf.Kind {
	case KindBridge:
		err = m.deleteHostLink(itf.HostName)
		if err == nil && n != nil && n.guard != nil {
			if err = n.guard.Remove(addrOwner(owner, itf.Name)); err != nil {
				err = fmt.Errorf("multinet: network %q: port security: %w", n.Name, err)
			}
		}
	case KindMacvlan:
		if pod != nil {
			err = pod.deleteLink(itf.Name, itf.HardwareAddr())
		}
	case KindHost:
		err = m.giveBack(pod, itf)
		if err == nil {
			m.mu.Lock()
			if m.taken[itf.HostName] == owner {
				delete(m.taken, itf.HostName)
			}
			m.mu.Unlock()
		}
	}
	if err != nil {
		return err
	}
	if n != nil && n.alloc != nil {
		if err := n.alloc.Release(context.WithoutCancel(ctx), addrOwner(owner, itf.Name)); err != nil {
			return fmt.Errorf("multinet: network %q: %w", n.Name, err)
		}
	}
	return nil
}

// Interfaces returns owner's secondary interfaces, as attached; none if
// it has none.
func (m *Manager) Interfaces(owner string) ([]Interface, error) {
	if !ownerOK(owner) {
		return nil, nil
	}
	rec, _, err := m.readRecord(owner)
	return rec.Interfaces, err
}

// Sync detaches the interfaces of every owner that live says is gone
// (from the namespace it had at attach, if that is still there), and
// releases addresses held in the
// networks' allocators by owners without a record (left by a process
// killed between allocating and writing the record). Live owners keep
// everything, and each bridge's port security table then guards exactly
// the interfaces of the records left. It returns the owners it detached.
func (m *Manager) Sync(ctx context.Context, live func(owner string) bool) ([]string, error) {
	recs, err := m.records()
	if err != nil {
		return nil, err
	}
	var gone []string
	var errs []error
	recorded := map[string]bool{}
	for _, rec := range recs {
		if live(rec.Owner) {
			recorded[rec.Owner] = true
			continue
		}
		if err := m.Detach(ctx, rec.Owner, ""); err != nil {
			errs = append(errs, err)
			recorded[rec.Owner] = true
			continue
		}
		gone = append(gone, rec.Owner)
	}
	for _, name := range m.order {
		n := m.nets[name]
		if n.alloc == nil {
			continue
		}
		_, err := n.alloc.ReleaseExcept(ctx, func(key string) bool {
			owner, _, _ := strings.Cut(key, "/")
			return recorded[owner] || live(owner)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("multinet: network %q: %w", name, err))
		}
	}
	if recs, err := m.records(); err != nil {
		errs = append(errs, err)
	} else if err := m.syncGuards(recs); err != nil {
		errs = append(errs, err)
	}
	return gone, errors.Join(errs...)
}
