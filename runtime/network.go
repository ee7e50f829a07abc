package runtime

import (
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// The merge of the plugins' parts of a pod's network is merge.Networks;
// its policies are options of the Runtime (WithConflictPolicy,
// WithFamilyPreference).

// ConflictPolicy says what happens when two plugins set the same part of
// a pod's network (merge.ConflictPolicy).
type ConflictPolicy = merge.ConflictPolicy

// The conflict policies (merge's).
const (
	ConflictFail      = merge.ConflictFail
	ConflictAggregate = merge.ConflictAggregate
)

// FamilyPreference picks the pod's primary address
// (merge.FamilyPreference).
type FamilyPreference = merge.FamilyPreference

// The family preferences (merge's).
const (
	PreferIPv4        = merge.PreferIPv4
	PreferIPv6        = merge.PreferIPv6
	PreferPluginOrder = merge.PreferPluginOrder
)

// RouteInterfaceError reports a route through an interface that no part
// of the pod's network has (merge.RouteInterfaceError).
type RouteInterfaceError = merge.RouteInterfaceError

// contribution is one plugin's normalized part of a pod's network.
type contribution = merge.NetworkPart

// normalizePluginNetwork validates what a plugin returned, naming the
// plugin in the error.
func normalizePluginNetwork(plugin, method string, n *api.PodSandboxNetwork) (*api.PodSandboxNetwork, error) {
	out, err := api.NormalizeNetwork(n)
	if err != nil {
		return nil, &PluginError{Plugin: plugin, Method: method, Err: err}
	}
	if out != nil && proto.Size(out) == 0 {
		return nil, nil // an empty network is no network
	}
	return out, nil
}
