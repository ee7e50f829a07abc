package multinet

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// port is the record's interface itf of a bridge network as package
// portsec guards it: its host end, its MAC, and its addresses, with IPv6
// its link-local address (EUI-64, see configure). Its ID is
// "OWNER/netN", its pod the record's.
func port(rec record, itf Interface) portsec.Port {
	p := portsec.Port{ID: addrOwner(rec.Owner, itf.Name), Pod: rec.Pod, Interface: itf.HostName, MAC: itf.HardwareAddr()}
	v6 := false
	for _, a := range itf.Addrs {
		p.Addrs = append(p.Addrs, a.Addr())
		v6 = v6 || a.Addr().Is6()
	}
	if v6 && len(p.MAC) == 6 {
		p.Addrs = append(p.Addrs, portsec.LinkLocal(p.MAC))
	}
	return p
}

// openGuard returns the port security of bridge, one per bridge (bridge
// networks on one bridge share it), in the host namespace.
func (m *Manager) openGuard(bridge string) (*portsec.Guard, error) {
	if g := m.guards[bridge]; g != nil {
		return g, nil
	}
	g, err := portsec.New(bridge, HostVethPrefix, portsec.WithNetNS(int(m.host)))
	if err != nil {
		return nil, err
	}
	m.guards[bridge] = g
	return g, nil
}

// syncGuards makes each bridge's table guard exactly the bridge network
// interfaces of recs, one transaction per bridge: a bridge without any
// has no table. An interface whose network is no longer configured is
// not guarded (nor attached again); it is logged.
func (m *Manager) syncGuards(recs []record) error {
	ports := map[string][]portsec.Port{}
	for bridge := range m.guards {
		ports[bridge] = nil
	}
	for _, rec := range recs {
		for _, itf := range rec.Interfaces {
			if itf.Kind != KindBridge {
				continue
			}
			n := m.nets[itf.Network]
			if n == nil || n.guard == nil {
				m.log.Warn("a secondary interface of a network no longer configured has no port security", "owner", rec.Owner, "interface", itf.Name, "network", itf.Network)
				continue
			}
			ports[n.Bridge] = append(ports[n.Bridge], port(rec, itf))
		}
	}
	var errs []error
	for _, bridge := range slices.Sorted(maps.Keys(ports)) {
		skipped, err := m.guards[bridge].Sync(ports[bridge])
		for _, s := range skipped {
			m.log.Warn("a secondary interface's port is not guarded and passes nothing", "bridge", bridge, "error", s)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("multinet: bridge %q: port security: %w", bridge, err))
		}
	}
	return errors.Join(errs...)
}

// A PortDrop is a port security counter of a bridge network's interface.
type PortDrop struct {
	// Pod is the interface's pod (namespace/name, as Attach got it; the
	// owner where the record has none), Interface its name in the pod.
	Pod, Interface string
	Reason         portsec.Reason
	Packets        uint64
}

// PortDrops reads the port security counters of the bridge networks'
// interfaces: a series per interface and reason, sorted by bridge, then
// as [portsec.Guard.Drops] sorts them, and the frames dropped on host ends
// that no interface owns.
func (m *Manager) PortDrops() (drops []PortDrop, unknown uint64, err error) {
	for _, bridge := range slices.Sorted(maps.Keys(m.guards)) {
		d, u, err := m.guards[bridge].Drops()
		if err != nil {
			return nil, 0, fmt.Errorf("multinet: bridge %q: %w", bridge, err)
		}
		for _, x := range d {
			owner, ifName, _ := strings.Cut(x.ID, "/")
			pod := x.Pod
			if pod == x.ID {
				pod = owner
			}
			drops = append(drops, PortDrop{Pod: pod, Interface: ifName, Reason: x.Reason, Packets: x.Packets})
		}
		unknown += u
	}
	return drops, unknown, nil
}

// Uninstall removes the port security tables of cfg's bridge networks
// (bridge nrinet-podnet-portsec-BRIDGE, [portsec.TableName]) from the
// host namespace ([WithHostNetNS]; other options are ignored), after
// which their interfaces pass everything: what nri-podnet -uninstall
// does with -multinetwork. Bridges, interfaces and the state directory
// stay.
func Uninstall(cfg Config, opts ...Option) error {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return err
		}
	}
	if o.hostPath == "" {
		o.hostPath = "/proc/self/ns/net"
	}
	host, err := netns.GetFromPath(o.hostPath)
	if err != nil {
		return fmt.Errorf("multinet: host network namespace %s: %w", o.hostPath, err)
	}
	defer host.Close()
	var errs []error
	done := map[string]bool{}
	for _, n := range cfg.Networks {
		if n.Kind != KindBridge || done[n.Bridge] {
			continue
		}
		done[n.Bridge] = true
		g, err := portsec.New(n.Bridge, HostVethPrefix, portsec.WithNetNS(int(host)))
		if err == nil {
			err = g.Uninstall()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("multinet: network %q: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}
