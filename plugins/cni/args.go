package cni

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"github.com/nrinet/nrinet/api"
)

// What nri-cni passes to CNI for a pod is what containerd v2.4.2 passes
// (internal/cri/server/sandbox_run.go, cniNamespaceOpts and the to*
// functions it calls, with go-cni v1.1.14's types); the tests in
// containerd_test.go hold it to that.

// Capability arguments (CNI conventions, "well-known capabilities") that
// containerd passes, and the pod annotations it reads bandwidth from.
const (
	capPortMappings   = "portMappings"
	capBandwidth      = "bandwidth"
	capDNS            = "dns"
	capCgroupPath     = "cgroupPath"
	capPodAnnotations = "io.kubernetes.cri.pod-annotations"

	annotationIngressBandwidth = "kubernetes.io/ingress-bandwidth"
	annotationEgressBandwidth  = "kubernetes.io/egress-bandwidth"
)

// portMapping, bandwidth and dnsConfig are the capability arguments as
// containerd encodes them: go-cni's PortMapping, BandWidth and DNS, whose
// fields have no JSON tags, so that the keys are the field names (CNI
// plugins written in Go decode them case-insensitively).
type portMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string
	HostIP        string
}

type bandwidth struct {
	IngressRate  uint64
	IngressBurst uint64
	EgressRate   uint64
	EgressBurst  uint64
}

type dnsConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// runtimeConf returns the CNI runtime configuration of a pod on the
// interface ifName, as containerd builds it:
//
//   - ContainerID: the pod's ID; NetNS: netns;
//   - CNI_ARGS: IgnoreUnknown=1, K8S_POD_NAMESPACE, K8S_POD_NAME,
//     K8S_POD_INFRA_CONTAINER_ID (the pod's ID), K8S_POD_UID;
//   - capability arguments: capPodAnnotations (the pod's annotations,
//     always); capPortMappings (the mappings with a host port, protocol
//     lower-cased) if any; capBandwidth from the annotationIngressBandwidth
//     and annotationEgressBandwidth annotations (Kubernetes quantities in
//     bits per second, bursts math.MaxUint32) if either is set; capDNS if
//     the pod has a DNS configuration; capCgroupPath (the pod's cgroup
//     parent) if it is set.
//
// A bandwidth annotation containerd would refuse is an error naming it;
// the configuration returned with it has no bandwidth (for DEL, which
// must not be kept from cleaning up).
func runtimeConf(pod *api.PodSandbox, netns, ifName string) (*libcni.RuntimeConf, error) {
	rt := &libcni.RuntimeConf{
		ContainerID: pod.GetId(),
		NetNS:       netns,
		IfName:      ifName,
		// containerd's order is its map's (random); this is the kubelet's.
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.GetNamespace()},
			{"K8S_POD_NAME", pod.GetName()},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.GetId()},
			{"K8S_POD_UID", pod.GetUid()},
		},
		CapabilityArgs: map[string]any{capPodAnnotations: pod.GetAnnotations()},
	}
	if pms := portMappings(pod.GetPortMappings()); len(pms) > 0 {
		rt.CapabilityArgs[capPortMappings] = pms
	}
	bw, err := podBandwidth(pod.GetAnnotations())
	if bw != nil {
		rt.CapabilityArgs[capBandwidth] = *bw
	}
	if d := pod.GetDnsConfig(); d != nil {
		rt.CapabilityArgs[capDNS] = dnsConfig{Servers: d.GetServers(), Searches: d.GetSearches(), Options: d.GetOptions()}
	}
	if cg := pod.GetLinux().GetCgroupParent(); cg != "" {
		rt.CapabilityArgs[capCgroupPath] = cg
	}
	if err != nil {
		return rt, fmt.Errorf("pod %s: %w", podRef(pod), err)
	}
	return rt, nil
}

// portMappings converts the pod's port mappings as containerd's
// toCNIPortMappings does: those without a host port are left out, and
// the protocol is "tcp", "udp" or "sctp" (an unknown value's number).
func portMappings(pms []*api.PortMapping) []portMapping {
	var out []portMapping
	for _, pm := range pms {
		if pm.GetHostPort() <= 0 {
			continue
		}
		out = append(out, portMapping{
			HostPort:      pm.GetHostPort(),
			ContainerPort: pm.GetContainerPort(),
			Protocol:      strings.ToLower(strings.TrimPrefix(pm.GetProtocol().String(), "PROTOCOL_")),
			HostIP:        pm.GetHostIp(),
		})
	}
	return out
}

// podBandwidth reads the bandwidth annotations as containerd's
// toCNIBandWidth does; nil if neither is set. A bad value is an error
// naming the annotation and the value (containerd refuses the pod too);
// the other annotation is still read.
func podBandwidth(annotations map[string]string) (*bandwidth, error) {
	var bw *bandwidth
	var errs []error
	for _, key := range []string{annotationIngressBandwidth, annotationEgressBandwidth} {
		s, ok := annotations[key]
		if !ok {
			continue
		}
		v, err := parseBandwidth(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s %q: %w", key, s, err))
			continue
		}
		if bw == nil {
			bw = &bandwidth{}
		}
		if key == annotationIngressBandwidth {
			bw.IngressRate, bw.IngressBurst = v, math.MaxUint32
		} else {
			bw.EgressRate, bw.EgressBurst = v, math.MaxUint32
		}
	}
	if err := errors.Join(errs...); err != nil {
		return bw, fmt.Errorf("reading the pod's bandwidth annotations: %w", err)
	}
	return bw, nil
}
