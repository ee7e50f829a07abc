package cri

import (
	"fmt"
	"maps"
	"slices"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
)

// state is a sandbox's state as persisted.
type state string

const (
	stateReady    state = "READY"
	stateNotReady state = "NOTREADY"
)

// namespaceModes are the namespace options of the sandbox's configuration,
// echoed in its status.
type namespaceModes struct {
	Network  criapi.NamespaceMode `json:"network"`
	Pid      criapi.NamespaceMode `json:"pid"`
	Ipc      criapi.NamespaceMode `json:"ipc"`
	TargetID string               `json:"targetId,omitempty"`
}

// sandbox is what the store keeps about a sandbox, apart from its network
// record.
type sandbox struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Namespace      string            `json:"namespace"`
	UID            string            `json:"uid"`
	Attempt        uint32            `json:"attempt"`
	Labels         map[string]string `json:"labels,omitempty"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	RuntimeHandler string            `json:"runtimeHandler,omitempty"`
	Namespaces     namespaceModes    `json:"namespaceOptions"`
	State          state             `json:"state"`
	// CreatedAt is in nanoseconds since the epoch.
	CreatedAt int64 `json:"createdAt"`
	// NetNSName and NetNSPath name the sandbox's network namespace;
	// empty for host-network sandboxes.
	NetNSName   string `json:"netnsName,omitempty"`
	NetNSPath   string `json:"netnsPath,omitempty"`
	HostNetwork bool   `json:"hostNetwork"`
	// NRIStopped records that NRI StopPodSandbox was sent.
	NRIStopped bool `json:"nriStopped"`
	// CgroupParent, PortMappings and DNS are from the sandbox's
	// configuration, for NRI plugins: linux.cgroup_parent, and the pod
	// network extension's port_mappings and dns_config.
	CgroupParent string        `json:"cgroupParent,omitempty"`
	PortMappings []portMapping `json:"portMappings,omitempty"`
	DNS          *dnsConfig    `json:"dnsConfig,omitempty"`
}

// portMapping is a CRI PortMapping as the store keeps it.
type portMapping struct {
	// Protocol is the CRI Protocol's number (0 TCP, 1 UDP, 2 SCTP).
	Protocol      int32  `json:"protocol"`
	ContainerPort int32  `json:"containerPort"`
	HostPort      int32  `json:"hostPort"`
	HostIP        string `json:"hostIP,omitempty"`
}

// dnsConfig is a CRI DNSConfig as the store keeps it.
type dnsConfig struct {
	Servers  []string `json:"servers,omitempty"`
	Searches []string `json:"searches,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// toPortMappings keeps the port mappings of a sandbox's configuration.
func toPortMappings(pms []*criapi.PortMapping) []portMapping {
	var out []portMapping
	for _, pm := range pms {
		out = append(out, portMapping{
			Protocol:      int32(pm.GetProtocol()),
			ContainerPort: pm.GetContainerPort(),
			HostPort:      pm.GetHostPort(),
			HostIP:        pm.GetHostIp(),
		})
	}
	return out
}

// toDNSConfig keeps the DNS configuration of a sandbox's configuration;
// nil if it has none.
func toDNSConfig(d *criapi.DNSConfig) *dnsConfig {
	if d == nil {
		return nil
	}
	return &dnsConfig{Servers: slices.Clone(d.GetServers()), Searches: slices.Clone(d.GetSearches()), Options: slices.Clone(d.GetOptions())}
}

// reservedName is the unique name of a sandbox configuration, as
// containerd makes it: name_namespace_uid_attempt.
func reservedName(md *criapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
}

func (sb *sandbox) reservedName() string { return reservedName(sb.metadata()) }

func (sb *sandbox) ready() bool { return sb.State == stateReady }

func (sb *sandbox) metadata() *criapi.PodSandboxMetadata {
	return &criapi.PodSandboxMetadata{Name: sb.Name, Namespace: sb.Namespace, Uid: sb.UID, Attempt: sb.Attempt}
}

func (sb *sandbox) criState() criapi.PodSandboxState {
	if sb.ready() {
		return criapi.PodSandboxState_SANDBOX_READY
	}
	return criapi.PodSandboxState_SANDBOX_NOTREADY
}

// nriPod is the sandbox as NRI plugins see it, with the given addresses:
// with its cgroup parent, and its port mappings and DNS configuration
// (which the runtime library sends only to plugins with the pod network
// extension).
func (sb *sandbox) nriPod(ips []string) *api.PodSandbox {
	pod := &api.PodSandbox{
		Id:             sb.ID,
		Name:           sb.Name,
		Uid:            sb.UID,
		Namespace:      sb.Namespace,
		Labels:         maps.Clone(sb.Labels),
		Annotations:    maps.Clone(sb.Annotations),
		RuntimeHandler: sb.RuntimeHandler,
		Ips:            slices.Clone(ips),
	}
	if !sb.HostNetwork {
		pod.Linux = &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: api.NetworkNamespace, Path: sb.NetNSPath}}}
	}
	if sb.CgroupParent != "" {
		if pod.Linux == nil {
			pod.Linux = &api.LinuxPodSandbox{}
		}
		pod.Linux.CgroupParent = sb.CgroupParent
	}
	// The CRI values of Protocol are api.Protocol's.
	for _, pm := range sb.PortMappings {
		pod.PortMappings = append(pod.PortMappings, &api.PortMapping{
			Protocol:      api.Protocol(pm.Protocol),
			ContainerPort: pm.ContainerPort,
			HostPort:      pm.HostPort,
			HostIp:        pm.HostIP,
		})
	}
	if d := sb.DNS; d != nil {
		pod.DnsConfig = &api.PodDNSConfig{Servers: slices.Clone(d.Servers), Searches: slices.Clone(d.Searches), Options: slices.Clone(d.Options)}
	}
	return pod
}

// listItem is the sandbox as ListPodSandbox reports it.
func (sb *sandbox) listItem() *criapi.PodSandbox {
	return &criapi.PodSandbox{
		Id:             sb.ID,
		Metadata:       sb.metadata(),
		State:          sb.criState(),
		CreatedAt:      sb.CreatedAt,
		Labels:         maps.Clone(sb.Labels),
		Annotations:    maps.Clone(sb.Annotations),
		RuntimeHandler: sb.RuntimeHandler,
	}
}

// status is the sandbox's CRI status with the addresses of rec. Only a
// READY sandbox with a namespace reports addresses: ip = ips[0],
// additional_ips = ips[1:].
func (sb *sandbox) status(rec *api.PodNetworkRecord) *criapi.PodSandboxStatus {
	nw := &criapi.PodSandboxNetworkStatus{AdditionalIps: []*criapi.PodIP{}}
	if ips := rec.GetNetwork().GetIps(); sb.ready() && !sb.HostNetwork && len(ips) > 0 {
		nw.Ip = ips[0]
		for _, ip := range ips[1:] {
			nw.AdditionalIps = append(nw.AdditionalIps, &criapi.PodIP{Ip: ip})
		}
	}
	return &criapi.PodSandboxStatus{
		Id:        sb.ID,
		Metadata:  sb.metadata(),
		State:     sb.criState(),
		CreatedAt: sb.CreatedAt,
		Network:   nw,
		Linux: &criapi.LinuxPodSandboxStatus{Namespaces: &criapi.Namespace{Options: &criapi.NamespaceOption{
			Network:  sb.Namespaces.Network,
			Pid:      sb.Namespaces.Pid,
			Ipc:      sb.Namespaces.Ipc,
			TargetId: sb.Namespaces.TargetID,
		}}},
		Labels:         maps.Clone(sb.Labels),
		Annotations:    maps.Clone(sb.Annotations),
		RuntimeHandler: sb.RuntimeHandler,
	}
}

// matches reports whether the sandbox passes a ListPodSandbox filter whose
// ID has already been resolved.
func (sb *sandbox) matches(f *criapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && f.GetId() != sb.ID {
		return false
	}
	if st := f.GetState(); st != nil && st.GetState() != sb.criState() {
		return false
	}
	for k, v := range f.GetLabelSelector() {
		if got, ok := sb.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
