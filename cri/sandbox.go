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

// nriPod is the sandbox as NRI plugins see it, with the given addresses.
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
