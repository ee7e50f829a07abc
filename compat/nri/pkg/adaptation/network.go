package adaptation

import (
	"context"
	"errors"

	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// nrinet's pod network extension, which upstream does not have: NRI
// plugins hand the pod's network back to the runtime (from RunPodSandbox,
// on PodSandboxStatus, and at any time through UpdatePodSandboxNetwork).
// A runtime that lets NRI plugins own its pods' networks uses these on top
// of upstream's API; docs/network-contract.md is the contract.

// PodNetworkRecord is a pod's network as the runtime keeps it: the merged
// network, the owner of each part, the parts that are stale, and each
// plugin's own part.
type PodNetworkRecord = nrinet.PodNetworkRecord

// PodSandboxNetwork is a pod's network, or one plugin's part of it.
type PodSandboxNetwork = nrinet.PodSandboxNetwork

// PortMapping is a port of the pod published on the host, as in the pod's
// CRI configuration; PodSandbox.PortMappings carries them to the plugins
// that negotiated the pod network extension (nri-cni passes them to CNI as
// the portMappings capability).
type PortMapping = nrinet.PortMapping

// Protocol is a PortMapping's protocol.
type Protocol = nrinet.Protocol

// The protocols of a PortMapping.
const (
	ProtocolTCP  = nrinet.Protocol_PROTOCOL_TCP
	ProtocolUDP  = nrinet.Protocol_PROTOCOL_UDP
	ProtocolSCTP = nrinet.Protocol_PROTOCOL_SCTP
)

// PodDNSConfig is the DNS configuration of the pod's CRI configuration;
// PodSandbox.DnsConfig carries it to the plugins that negotiated the pod
// network extension (nri-cni passes it to CNI as the dns capability).
type PodDNSConfig = nrinet.PodDNSConfig

// PodNetworkStore is where the runtime keeps its pods' network records,
// with the sandboxes; see EnablePodNetworks.
type PodNetworkStore interface {
	// PodNetwork returns the pod's record: an empty record for a pod no
	// plugin has set a network for yet, nil for a host-network pod or a
	// pod whose network the runtime owns (no plugin may update it), and
	// an error for an unknown pod.
	PodNetwork(ctx context.Context, podID string) (*PodNetworkRecord, error)
	// SetPodNetwork persists rec as the pod's record after plugin changed
	// its part (UpdatePodSandboxNetwork). Calls for one pod are
	// serialized.
	SetPodNetwork(ctx context.Context, podID, plugin string, rec *PodNetworkRecord) error
}

var (
	// ErrNetworkNotReady wraps the error of RunPodSandboxNetwork for a
	// pod that needs a network while a required network plugin is not
	// connected.
	ErrNetworkNotReady = runtime.ErrNetworkNotReady
	// ErrNoAddress wraps the error of RunPodSandboxNetwork when a
	// required network plugin gave the pod no address.
	ErrNoAddress = runtime.ErrNoAddress
)

// EnablePodNetworks turns nrinet's pod network extension on, before
// Start: the runtime lets NRI plugins set up its pods' networks and hand
// them back. Without it the Adaptation behaves as upstream's: it does not
// advertise the extension, so network plugins built on nrinet subscribe to
// classic events only or refuse to join (nri-podnet, nri-cni), and the
// pod networks plugins return are ignored. store is where the runtime keeps
// the pods' records, through which plugins' updates
// (UpdatePodSandboxNetwork) are persisted and joining plugins learn each
// pod's addresses; it may be consulted from Start on. required names the
// network plugins ("NN-name", or a base name for any index) that must be
// connected for a pod that is not host-network to be created, and must
// each give it an address; see NetworkReady.
func (r *Adaptation) EnablePodNetworks(store PodNetworkStore, required ...string) error {
	if store == nil {
		return errors.New("EnablePodNetworks: nil PodNetworkStore")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rt != nil {
		return errors.New("EnablePodNetworks: the NRI runtime already started")
	}
	r.podNetworks = true
	r.netStore = store
	r.requiredNetwork = append([]string(nil), required...)
	return nil
}

// RunPodSandboxNetwork relays the creation of a pod, as RunPodSandbox
// does, and returns the pod's network as the plugins returned it, merged,
// with the owner of each part: the record to persist with the sandbox. It
// is nil for a host-network pod. On error the plugins that took part have
// been told to stop and remove the pod again.
func (r *Adaptation) RunPodSandboxNetwork(ctx context.Context, req *RunPodSandboxRequest) (*PodNetworkRecord, error) {
	rt, err := r.runtime("RunPodSandbox")
	if err != nil {
		return nil, err
	}
	return rt.RunPodSandbox(ctx, req)
}

// PodSandboxStatus returns the pod's current network, starting from last,
// the record the runtime persisted: the plugins subscribed to
// PodSandboxStatus are asked (verbose asks them to check and explain),
// within the status timeout; a plugin that fails or is late keeps its last
// part, named in the record's Stale. It never fails because of a plugin.
func (r *Adaptation) PodSandboxStatus(ctx context.Context, pod *PodSandbox, last *PodNetworkRecord, verbose bool) (*PodNetworkRecord, error) {
	rt, err := r.runtime("PodSandboxStatus")
	if err != nil {
		return nil, err
	}
	return rt.PodSandboxStatus(ctx, pod, last, verbose)
}

// NetworkReady reports whether every required network plugin is
// connected and, if not, which are missing; a runtime reports it as its
// NetworkReady condition.
func (r *Adaptation) NetworkReady() (bool, string) {
	rt, err := r.runtime("NetworkReady")
	if err != nil {
		return false, err.Error()
	}
	return rt.NetworkReady()
}
