package merge

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// ConflictPolicy says what happens when two plugins set the same part of
// a pod's network.
type ConflictPolicy int

const (
	// ConflictFail fails the request with a *ConflictError naming both
	// plugins and the value (the default).
	ConflictFail ConflictPolicy = iota
	// ConflictAggregate appends a later plugin's addresses to those of the
	// same family, dropping duplicates; for interfaces, routes, DNS and
	// info entries the first plugin keeps what it set and the later
	// plugin's value is dropped with a warning. The addresses of a dropped
	// interface are dropped with it (also when the plugin lists them in
	// ips), and a plugin is listed among a family's owners only for
	// addresses of its that were kept.
	ConflictAggregate
)

// FamilyPreference picks the pod's primary address.
type FamilyPreference int

const (
	// PreferIPv4 makes the first IPv4 address primary, if there is one
	// (the default, like containerd's ip_pref).
	PreferIPv4 FamilyPreference = iota
	// PreferIPv6 makes the first IPv6 address primary, if there is one.
	PreferIPv6
	// PreferPluginOrder makes the first address primary, in plugin order.
	PreferPluginOrder
)

// NetworkPart is one plugin's normalized part of a pod's network
// (api.NormalizeNetwork).
type NetworkPart struct {
	Plugin  string
	Network *api.PodSandboxNetwork
}

// Networks merges the plugins' parts of a pod's network, given in
// invocation order, into the pod's network with an owner per part (the
// record a runtime keeps), and returns the warnings of ConflictAggregate. Under ConflictFail a part set by two
// plugins is a *ConflictError; under ConflictAggregate the conflicts are
// resolved as documented on ConflictAggregate and described in warnings.
// Under either policy, a route through an interface that the merged
// network does not have is a *RouteInterfaceError naming the plugin that
// set the route.
func Networks(parts []NetworkPart, policy ConflictPolicy, pref FamilyPreference) (*api.PodNetworkRecord, []string, error) {
	rec := &api.PodNetworkRecord{Network: &api.PodSandboxNetwork{}, Owners: map[string]string{}, Plugins: map[string]*api.PodSandboxNetwork{}}
	var (
		addrs    []netip.Addr
		warnings []string
		out      = rec.Network
	)
	// claim records plugin as owner of key, or reports whether it may not.
	// have describes what the current owner set.
	claim := func(key, plugin, value, have string) (bool, error) {
		prev, ok := rec.Owners[key]
		if !ok || prev == plugin {
			rec.Owners[key] = plugin
			return true, nil
		}
		if policy == ConflictFail {
			return false, &ConflictError{Field: fmt.Sprintf("%s (%s; already %s)", describeOwnerKey(key), value, have), Plugin: plugin, Owner: prev}
		}
		warnings = append(warnings, fmt.Sprintf("plugin %q: %s (%s) is already set by %q to %s; keeping that", plugin, describeOwnerKey(key), value, prev, have))
		return false, nil
	}
	for _, c := range parts {
		n := c.Network
		if n == nil {
			continue
		}
		rec.Plugins[c.Plugin] = n
		pluginAddrs := slices.DeleteFunc(api.NetworkAddresses(n), droppedAddresses(n, c.Plugin, rec.Owners, policy))
		byFamily := map[string][]netip.Addr{}
		for _, a := range pluginAddrs {
			k := api.FamilyOwnerKey(a)
			byFamily[k] = append(byFamily[k], a)
		}
		for _, key := range []string{api.OwnerIPv4, api.OwnerIPv6} {
			fam := byFamily[key]
			if len(fam) == 0 {
				continue
			}
			prev, owned := rec.Owners[key]
			switch {
			case !owned || prev == c.Plugin:
				rec.Owners[key] = c.Plugin
			case policy == ConflictFail:
				return nil, nil, &ConflictError{
					Field:  fmt.Sprintf("the pod's %s addresses (%s; already %s)", familyName(key), joinAddrs(fam), joinAddrs(familyOf(addrs, key))),
					Plugin: c.Plugin, Owner: prev,
				}
			default:
				if !strings.Contains(","+prev+",", ","+c.Plugin+",") {
					rec.Owners[key] = prev + "," + c.Plugin
				}
			}
		}
		// Addresses keep the plugin's order, across families.
		for _, a := range pluginAddrs {
			if !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		for _, itf := range n.GetInterfaces() {
			have := ""
			if i := slices.IndexFunc(out.Interfaces, func(x *api.NetworkInterface) bool { return x.GetName() == itf.GetName() }); i >= 0 {
				have = interfaceString(out.Interfaces[i])
			}
			if ok, err := claim(api.OwnerInterface(itf.GetName()), c.Plugin, interfaceString(itf), have); err != nil {
				return nil, nil, err
			} else if ok {
				out.Interfaces = slices.DeleteFunc(out.Interfaces, func(x *api.NetworkInterface) bool { return x.GetName() == itf.GetName() })
				out.Interfaces = append(out.Interfaces, itf)
			} else if len(itf.GetAddresses()) > 0 {
				warnings[len(warnings)-1] += fmt.Sprintf("; its addresses %s are dropped too", strings.Join(itf.GetAddresses(), ", "))
			}
		}
		for _, r := range n.GetRoutes() {
			have := ""
			if i := slices.IndexFunc(out.Routes, func(x *api.NetworkRoute) bool { return x.GetDestination() == r.GetDestination() }); i >= 0 {
				have = routeString(out.Routes[i])
			}
			if ok, err := claim(api.OwnerRoute(r.GetDestination()), c.Plugin, routeString(r), have); err != nil {
				return nil, nil, err
			} else if ok {
				out.Routes = slices.DeleteFunc(out.Routes, func(x *api.NetworkRoute) bool { return x.GetDestination() == r.GetDestination() })
				out.Routes = append(out.Routes, r)
			}
		}
		if d := n.GetDns(); d != nil {
			if ok, err := claim(api.OwnerDNS, c.Plugin, "servers "+strings.Join(d.GetServers(), " "), "servers "+strings.Join(out.GetDns().GetServers(), " ")); err != nil {
				return nil, nil, err
			} else if ok {
				out.Dns = d
			}
		}
		for _, k := range slices.Sorted(maps.Keys(n.GetInfo())) {
			if ok, err := claim(api.OwnerInfo(k), c.Plugin, fmt.Sprintf("%q", n.GetInfo()[k]), fmt.Sprintf("%q", out.GetInfo()[k])); err != nil {
				return nil, nil, err
			} else if ok {
				if out.Info == nil {
					out.Info = map[string]string{}
				}
				out.Info[k] = n.GetInfo()[k]
			}
		}
	}
	for _, a := range orderAddresses(addrs, pref) {
		out.Ips = append(out.Ips, a.String())
	}
	if err := checkRouteInterfaces(rec); err != nil {
		return nil, nil, err
	}
	return rec, warnings, nil
}

// RouteInterfaceError reports a route through an interface that no part
// of the pod's network has. A plugin may route through an interface
// another plugin created, but the interface must be in the merged
// network. It wraps api.ErrInvalidNetwork.
type RouteInterfaceError struct {
	// Plugin set the route; its full name, "NN-name".
	Plugin string
	// Route is the route, e.g. "198.18.1.0/24 via 198.18.0.1 dev eth1".
	Route string
	// Interface is the interface the route names.
	Interface string
}

func (e *RouteInterfaceError) Error() string {
	return fmt.Sprintf("plugin %q: route %s: %v: the pod's network has no interface %q", e.Plugin, e.Route, api.ErrInvalidNetwork, e.Interface)
}

// Unwrap returns api.ErrInvalidNetwork.
func (e *RouteInterfaceError) Unwrap() error { return api.ErrInvalidNetwork }

// checkRouteInterfaces returns a *RouteInterfaceError for the first
// route of the merged network whose interface it does not have.
func checkRouteInterfaces(rec *api.PodNetworkRecord) error {
	n := rec.GetNetwork()
	for _, r := range n.GetRoutes() {
		dev := r.GetInterface()
		if dev == "" || slices.ContainsFunc(n.GetInterfaces(), func(x *api.NetworkInterface) bool { return x.GetName() == dev }) {
			continue
		}
		return &RouteInterfaceError{Plugin: rec.GetOwners()[api.OwnerRoute(r.GetDestination())], Route: routeString(r), Interface: dev}
	}
	return nil
}

// droppedAddresses returns a predicate matching the addresses of the
// interfaces of n that ConflictAggregate drops because another plugin
// already owns their names: those addresses are dropped with them, from
// the pod's addresses and from plugin's share of the family owners, even
// when n also lists them in ips. Under ConflictFail nothing is dropped.
func droppedAddresses(n *api.PodSandboxNetwork, plugin string, owners map[string]string, policy ConflictPolicy) func(netip.Addr) bool {
	dropped := map[netip.Addr]bool{}
	for _, itf := range n.GetInterfaces() {
		prev, owned := owners[api.OwnerInterface(itf.GetName())]
		if policy != ConflictAggregate || !owned || prev == plugin {
			continue
		}
		for _, s := range itf.GetAddresses() {
			if p, err := netip.ParsePrefix(s); err == nil {
				dropped[p.Addr()] = true
			}
		}
	}
	return func(a netip.Addr) bool { return dropped[a] }
}

// orderAddresses puts the primary address first (by preference), then the
// first address of the other family (the kubelet keeps one per family),
// then the rest in their order.
func orderAddresses(addrs []netip.Addr, pref FamilyPreference) []netip.Addr {
	if len(addrs) == 0 {
		return nil
	}
	first := func(want4 bool) int {
		return slices.IndexFunc(addrs, func(a netip.Addr) bool { return a.Is4() == want4 })
	}
	primary := 0
	switch pref {
	case PreferIPv4:
		if i := first(true); i >= 0 {
			primary = i
		}
	case PreferIPv6:
		if i := first(false); i >= 0 {
			primary = i
		}
	}
	out := []netip.Addr{addrs[primary]}
	if i := first(!addrs[primary].Is4()); i >= 0 {
		out = append(out, addrs[i])
	}
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func familyName(key string) string {
	if key == api.OwnerIPv4 {
		return "IPv4"
	}
	return "IPv6"
}

func familyOf(addrs []netip.Addr, key string) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if api.FamilyOwnerKey(a) == key {
			out = append(out, a)
		}
	}
	return out
}

func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func interfaceString(itf *api.NetworkInterface) string {
	s := itf.GetName()
	if itf.GetMac() != "" {
		s += " " + itf.GetMac()
	}
	if len(itf.GetAddresses()) > 0 {
		s += " " + strings.Join(itf.GetAddresses(), ",")
	}
	return s
}

func routeString(r *api.NetworkRoute) string {
	s := r.GetDestination()
	if r.GetGateway() != "" {
		s += " via " + r.GetGateway()
	}
	if r.GetInterface() != "" {
		s += " dev " + r.GetInterface()
	}
	return s
}

// describeOwnerKey turns an owner key into words for error messages.
func describeOwnerKey(key string) string {
	switch {
	case key == api.OwnerDNS:
		return "the pod's DNS configuration"
	case strings.HasPrefix(key, "interface/"):
		return fmt.Sprintf("interface %q", strings.TrimPrefix(key, "interface/"))
	case strings.HasPrefix(key, "route/"):
		return fmt.Sprintf("the route to %s", strings.TrimPrefix(key, "route/"))
	case strings.HasPrefix(key, "info/"):
		return fmt.Sprintf("info %q", strings.TrimPrefix(key, "info/"))
	}
	return key
}
