package netpol

import (
	"fmt"
	"net/netip"
	"strconv"

	"go4.org/netipx"

	"github.com/nrinet/nrinet/plugins/podnet/internal/l4proto"
)

// Protocol is a transport protocol a policy port names, by its IP protocol
// number (nri-podnet's one protocol type, shared with hostport).
type Protocol = l4proto.Protocol

// The protocols of NetworkPolicy ports.
const (
	TCP  = l4proto.TCP
	UDP  = l4proto.UDP
	SCTP = l4proto.SCTP
)

// NamedPort is a container port with a name, which a policy port may name
// instead of a number.
type NamedPort struct {
	Name     string
	Protocol Protocol
	Port     uint16
}

// Pod is a pod the engine knows: every pod of the cluster that has
// addresses (a policy's peers), local or not. Local pods are the node's
// own, whose traffic the node's table filters.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	IPs             []netip.Addr
	// Ports are the named ports of the pod's containers.
	Ports []NamedPort
	// Local: the pod runs on this node, on its pod network.
	Local bool
}

// Key is "namespace/name".
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// Namespace is a namespace with its labels (namespaceSelector).
type Namespace struct {
	Name   string
	Labels map[string]string
}

// PortRange is a protocol's port range, First to Last inclusive; First 0
// means every port of the protocol.
type PortRange struct {
	Protocol    Protocol
	First, Last uint16
}

func (r PortRange) String() string {
	switch {
	case r.First == 0:
		return r.Protocol.String()
	case r.First == r.Last:
		return r.Protocol.String() + "/" + strconv.Itoa(int(r.First))
	}
	return fmt.Sprintf("%s/%d-%d", r.Protocol, r.First, r.Last)
}

// Rule is one allowed flow of a direction: from (ingress) or to (egress)
// any address of Peers (nil: any address at all), on any of Ports (none:
// every port of every protocol).
type Rule struct {
	// Policy is the "namespace/name" of the policy the rule comes from.
	Policy string
	Peers  *netipx.IPSet
	Ports  []PortRange
	// PeersID names Peers for every pod the policy selects: the rule of
	// the policy they come from (Compile sets it). Rules of several pods
	// with one PeersID share one set in the table; "" gives the rule a
	// set of its own.
	PeersID string
}

// Direction is a pod's verdict in one direction when a policy isolates it
// there: what its Rules allow, all else dropped.
type Direction struct {
	Rules []Rule
	// Policies are the policies that isolate the pod in this direction,
	// "namespace/name", sorted.
	Policies []string
}

// PodRules is what the table enforces for one local pod. A nil direction
// is not isolated: everything is allowed there.
type PodRules struct {
	Pod             string // namespace/name
	IPs             []netip.Addr
	Ingress, Egress *Direction
	// Policies are the policies that select the pod, "namespace/name",
	// sorted.
	Policies []string
}

// Program is the compiled state: the rules of each local pod that some
// policy isolates, in the order of their keys.
type Program struct {
	Pods []PodRules
	// Oversized are the policies left out for their size (they allow
	// nothing; the pods they select stay isolated), by name.
	Oversized []Oversized
}
