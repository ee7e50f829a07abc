package podnet

import (
	"fmt"
	"net/netip"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// port is the pod's port as package portsec guards it: its host veth,
// MAC and addresses, with IPv6 its link-local address.
func (p *Plugin) port(pod *api.PodSandbox, addrs []netip.Prefix) portsec.Port {
	id := pod.GetId()
	pp := portsec.Port{ID: id, Pod: podRef(pod).String(), Interface: hostVethName(id), MAC: podMAC(id)}
	v6 := false
	for _, a := range addrs {
		pp.Addrs = append(pp.Addrs, a.Addr())
		v6 = v6 || a.Addr().Is6()
	}
	if v6 {
		pp.Addrs = append(pp.Addrs, portsec.LinkLocal(podMAC(id)))
	}
	return pp
}

// syncPorts makes the port security table guard exactly the ports of
// the pods that exist and hold addresses, replacing it in one
// transaction.
func (p *Plugin) syncPorts(pods []*api.PodSandbox, lookup func(id string) ([]netip.Prefix, bool, error)) error {
	var ports []portsec.Port
	for _, pod := range pods {
		if pod.NetNSPath() == "" {
			continue
		}
		addrs, ok, err := lookup(pod.GetId())
		if err != nil {
			return fmt.Errorf("podnet: %w", err)
		}
		if ok {
			ports = append(ports, p.port(pod, addrs))
		}
	}
	skipped, err := p.portGuard().Sync(ports)
	for _, s := range skipped {
		p.log.Warn("a pod's port is not guarded and passes nothing", "error", s)
	}
	if err != nil {
		return fmt.Errorf("podnet: port security: %w", err)
	}
	return nil
}
