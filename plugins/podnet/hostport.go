package podnet

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

// podName is a pod's namespace/name, the value of the "pod" key of log
// lines; its ID goes under "sandbox".
func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}

// podRef names a pod for package hostport.
func podRef(pod *api.PodSandbox) hostport.PodRef {
	return hostport.PodRef{ID: pod.GetId(), Namespace: pod.GetNamespace(), Name: pod.GetName()}
}

// portMappings converts the pod's port mappings (the pod network
// extension's PodSandbox.port_mappings, from its CRI configuration) for
// package hostport. Those without a host port are kept: the package
// leaves them out. A port out of range or a host IP that is no address is
// an error naming the pod and the value.
func portMappings(pod *api.PodSandbox) ([]hostport.Mapping, error) {
	var out []hostport.Mapping
	for _, pm := range pod.GetPortMappings() {
		var proto hostport.Protocol
		switch pm.GetProtocol() {
		case api.Protocol_PROTOCOL_TCP:
			proto = hostport.TCP
		case api.Protocol_PROTOCOL_UDP:
			proto = hostport.UDP
		case api.Protocol_PROTOCOL_SCTP:
			proto = hostport.SCTP
		default:
			return nil, fmt.Errorf("%w: pod %s/%s: protocol %v", hostport.ErrInvalidMapping, pod.GetNamespace(), pod.GetName(), pm.GetProtocol())
		}
		for _, p := range []struct {
			what string
			v    int32
		}{{"host port", pm.GetHostPort()}, {"container port", pm.GetContainerPort()}} {
			if p.v < 0 || p.v > 65535 {
				return nil, fmt.Errorf("%w: pod %s/%s: %s %d is outside 0..65535", hostport.ErrInvalidMapping, pod.GetNamespace(), pod.GetName(), p.what, p.v)
			}
		}
		ip, err := hostport.ParseHostIP(pm.GetHostIp())
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
		}
		out = append(out, hostport.Mapping{
			Protocol: proto, HostPort: uint16(pm.GetHostPort()), ContainerPort: uint16(pm.GetContainerPort()), HostIP: ip,
		})
	}
	return out, nil
}

// hasHostPort reports whether one of the pod's mappings has a host port.
func hasHostPort(pod *api.PodSandbox) bool {
	for _, pm := range pod.GetPortMappings() {
		if pm.GetHostPort() != 0 {
			return true
		}
	}
	return false
}

// publish publishes the pod's host ports, targeting addrs (the pod's
// prefixes). A conflict is counted in the metrics.
func (p *Plugin) publish(pod *api.PodSandbox, addrs []netip.Prefix) error {
	if !hasHostPort(pod) && !p.portMapper().Holds(pod.GetId()) {
		return nil
	}
	mappings, err := portMappings(pod)
	if err != nil {
		return err
	}
	hp := hostport.Pod{PodRef: podRef(pod), Mappings: mappings}
	for _, a := range addrs {
		hp.Addrs = append(hp.Addrs, a.Addr())
	}
	err = p.portMapper().Add(hp)
	if errors.Is(err, hostport.ErrConflict) {
		p.metrics.hostPortConflict()
	}
	return err
}

// syncHostPorts makes the host port rules those of the pods that exist
// and hold addresses (from their mappings, which the runtime sends in
// Synchronize as in RunPodSandbox). A pod whose mappings are invalid or
// conflict is logged and gets none; only a failure to write the rules is
// returned.
func (p *Plugin) syncHostPorts(pods []*api.PodSandbox, lookup func(id string) ([]netip.Prefix, bool, error)) error {
	var hps []hostport.Pod
	for _, pod := range pods {
		if !hasHostPort(pod) || pod.NetNSPath() == "" {
			continue
		}
		addrs, ok, err := lookup(pod.GetId())
		if err != nil {
			return err
		}
		if !ok {
			continue // stopped, or not set up by this plugin
		}
		mappings, err := portMappings(pod)
		if err != nil {
			p.log.Warn("not publishing the host ports of a pod", "pod", podName(pod), "sandbox", pod.GetId(), "error", err)
			continue
		}
		hp := hostport.Pod{PodRef: podRef(pod), Mappings: mappings}
		for _, a := range addrs {
			hp.Addrs = append(hp.Addrs, a.Addr())
		}
		hps = append(hps, hp)
	}
	skipped, err := p.portMapper().Sync(hps)
	for _, s := range skipped {
		p.log.Warn("not publishing the host ports of a pod", "error", s)
	}
	if err != nil {
		return fmt.Errorf("podnet: host ports: %w", err)
	}
	if len(hps) > 0 {
		p.log.Info("host ports reconciled", "pods", len(hps)-len(skipped))
	}
	return nil
}

// hostPortMapper returns the host port mapper of cfg: reachable from the
// node's 127.0.0.1 through the bridge (hostport.WithLocalhost) unless
// cfg.NoLocalhostHostPorts. With that setting the bridge's route_localnet
// is turned off here, before Synchronize replaces a table that a run
// without it left (with the guard that route_localnet needs).
func (p *Plugin) hostPortMapper(cfg Config) (*hostport.Mapper, error) {
	if cfg.NoLocalhostHostPorts {
		was, err := noRouteLocalnet(cfg.Bridge)
		if err != nil {
			return nil, fmt.Errorf("podnet: bridge %q: %w", cfg.Bridge, err)
		}
		if was {
			p.log.Info("turned route_localnet off on the bridge (noLocalhostHostPorts)", "bridge", cfg.Bridge)
		}
		p.log.Info("host ports are not reachable from the node's 127.0.0.1 (noLocalhostHostPorts)")
		return hostport.New()
	}
	if sysctl := filepath.Join("/proc/sys/net/ipv4/conf", cfg.Bridge, "route_localnet"); !sysctlWritable(sysctl) {
		p.log.Warn("host ports are not reachable from the node's 127.0.0.1: /proc/sys is read-only here (a container that is not privileged), so route_localnet cannot be turned on; they are reachable on the node's other addresses",
			"sysctl", sysctl)
		return hostport.New()
	}
	hp, err := hostport.New(hostport.WithLocalhost(cfg.Bridge))
	if err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	return hp, nil
}
