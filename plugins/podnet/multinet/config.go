package multinet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/nrinet/nrinet/ipam"
)

// Kind is what a secondary network gives a pod.
type Kind string

// The kinds of secondary network.
const (
	// KindBridge: a veth pair, the pod end netN, the host end on the
	// network's own bridge, which holds the gateways; addresses from the
	// network's allocator.
	KindBridge Kind = "bridge"
	// KindMacvlan: a macvlan (bridge mode) on a host interface, made in the
	// pod as netN; addresses from the network's allocator.
	KindMacvlan Kind = "macvlan"
	// KindHost: a host interface moved into the pod whole and renamed
	// netN; back on the host under its own name at detach. It keeps its
	// addresses; none are allocated.
	KindHost Kind = "host"
)

// Network is one secondary network of the node.
type Network struct {
	// Name is the network's name: a DNS label (lower-case letters, digits
	// and '-', at most 63), as a DRA device name must be.
	Name string `json:"name"`
	// Kind is bridge, macvlan or host.
	Kind Kind `json:"kind"`
	// Bridge is the bridge of a bridge network (created if missing).
	Bridge string `json:"bridge,omitempty"`
	// Master is the host interface a macvlan network sits on.
	Master string `json:"master,omitempty"`
	// Interface is the host interface a host network moves into the pod.
	Interface string `json:"interface,omitempty"`
	// Subnets, Exclude and Gateways configure the network's allocator
	// (bridge and macvlan), as nri-podnet's own: one address per subnet.
	// A bridge network has at most one subnet of each family.
	Subnets  []string `json:"subnets,omitempty"`
	Exclude  []string `json:"exclude,omitempty"`
	Gateways []string `json:"gateways,omitempty"`
	// Routes are prefixes the pod reaches through the network's gateway
	// of the same family (for example the whole secondary network, of
	// which Subnets is this node's part).
	Routes []string `json:"routes,omitempty"`
	// MTU of the pod's interface (and of the bridge); 0: 1500 for a
	// bridge network, the master's for a macvlan network.
	MTU int `json:"mtu,omitempty"`
}

// Config is the node's secondary networks.
type Config struct {
	// StateDir holds one allocator file per network with addresses and a
	// record per owner of interfaces (required).
	StateDir string `json:"stateDir"`
	// Networks lists the networks; their names are unique.
	Networks []Network `json:"networks"`
}

// FromBytes parses and validates a JSON configuration.
func FromBytes(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("multinet: parsing configuration: %w", err)
	}
	return c, c.Validate()
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ifNameOK reports whether s can name a network interface.
func ifNameOK(s string) bool {
	return s != "" && len(s) <= 15 && s != "." && s != ".." && !bytes.ContainsAny([]byte(s), "/: \t\n")
}

// Validate reports every problem, joined; each names the network and
// quotes the value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("multinet: "+format, args...)) }
	if c.StateDir == "" {
		bad("no stateDir")
	}
	seen := map[string]bool{}
	hostIfs := map[string]string{}
	for i, n := range c.Networks {
		if !dnsLabel.MatchString(n.Name) {
			bad("networks[%d]: name %q is not a DNS label", i, n.Name)
		}
		if seen[n.Name] {
			bad("network %q: defined twice", n.Name)
		}
		seen[n.Name] = true
		if n.MTU != 0 && (n.MTU < 68 || n.MTU > 65535) {
			bad("network %q: mtu %d is outside 68..65535", n.Name, n.MTU)
		}
		field := map[Kind]string{KindBridge: n.Bridge, KindMacvlan: n.Master, KindHost: n.Interface}
		want := map[Kind]string{KindBridge: "bridge", KindMacvlan: "master", KindHost: "interface"}
		f, ok := want[n.Kind]
		if !ok {
			bad("network %q: kind %q is not bridge, macvlan or host", n.Name, n.Kind)
			continue
		}
		if !ifNameOK(field[n.Kind]) {
			bad("network %q: %s %q is not a valid interface name", n.Name, f, field[n.Kind])
		}
		if n.Kind == KindHost {
			if other, dup := hostIfs[n.Interface]; dup {
				bad("network %q: interface %q is network %q's too", n.Name, n.Interface, other)
			}
			hostIfs[n.Interface] = n.Name
		}
		if n.Kind == KindHost && len(n.Subnets) == 0 {
			if len(n.Exclude)+len(n.Gateways)+len(n.Routes) > 0 {
				bad("network %q: exclude, gateways and routes need subnets", n.Name)
			}
			continue
		}
		icfg, err := n.ipamConfig()
		if err != nil {
			bad("network %q: %w", n.Name, err)
		}
		if n.Kind == KindBridge && err == nil {
			if v4, v6 := familyCounts(icfg.Subnets); v4 > 1 || v6 > 1 {
				bad("network %q: subnets %q: a bridge network has at most one IPv4 and one IPv6 subnet (its port security lets a pod send from one address of each family)", n.Name, n.Subnets)
			}
		}
		if _, err := n.routes(); err != nil {
			bad("network %q: %w", n.Name, err)
		}
	}
	return errors.Join(errs...)
}

// familyCounts counts the IPv4 and the IPv6 prefixes of ps.
func familyCounts(ps []netip.Prefix) (v4, v6 int) {
	for _, p := range ps {
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	return v4, v6
}

// ipamConfig is the network's allocator configuration.
func (n Network) ipamConfig() (ipam.Config, error) {
	return ipam.ParseConfig(n.Subnets, n.Exclude, n.Gateways)
}

// routes parses Routes; each must be a masked prefix.
func (n Network) routes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range n.Routes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", s, err)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("route %q is not masked (want %s)", s, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}
