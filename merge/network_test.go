package merge_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

// parts builds the plugins' parts from plugin name and network pairs, each
// normalized as the runtime would.
func parts(t *testing.T, pairs ...any) []merge.NetworkPart {
	t.Helper()
	var out []merge.NetworkPart
	for i := 0; i < len(pairs); i += 2 {
		n, err := api.NormalizeNetwork(pairs[i+1].(*api.PodSandboxNetwork))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, merge.NetworkPart{Plugin: pairs[i].(string), Network: n})
	}
	return out
}

func eth(name string, addrs ...string) *api.PodSandboxNetwork {
	return &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: name, Addresses: addrs}}}
}

func route(dst, gw, dev string) *api.PodSandboxNetwork {
	return &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: dst, Gateway: gw, Interface: dev}}}
}

// TestNetworks_RouteInterface checks that a route names an interface
// of the merged network: its own plugin's, or another plugin's (a plugin
// may route through an interface an earlier one created).
func TestNetworks_RouteInterface(t *testing.T) {
	withRoute := func(n *api.PodSandboxNetwork, dst, gw, dev string) *api.PodSandboxNetwork {
		n.Routes = append(n.Routes, route(dst, gw, dev).Routes...)
		return n
	}
	for _, tc := range []struct {
		name    string
		parts   []any
		wantErr string // empty: merges
	}{
		{name: "own interface", parts: []any{"10-a", withRoute(eth("eth0", "198.18.0.5/24"), "default", "198.18.0.1", "eth0")}},
		{name: "no interface named", parts: []any{"10-a", route("198.18.1.0/24", "198.18.0.1", "")}},
		{name: "earlier plugin's interface", parts: []any{
			"10-a", eth("eth0", "198.18.0.5/24"),
			"20-b", route("198.18.1.0/24", "198.18.0.1", "eth0"),
		}},
		// RunPodSandbox merges after each plugin, so there this fails at
		// 10-a, which ran before net1 existed; status and updates merge
		// every part at once.
		{name: "later plugin's interface", parts: []any{
			"10-a", route("198.18.1.0/24", "", "net1"),
			"20-b", eth("net1", "198.18.1.5/24"),
		}},
		{name: "unknown interface", parts: []any{
			"10-a", withRoute(eth("eth0", "198.18.0.5/24"), "198.18.1.0/24", "198.18.0.1", "eth1"),
		}, wantErr: `plugin "10-a": route 198.18.1.0/24 via 198.18.0.1 dev eth1`},
		{name: "unknown interface, other plugin", parts: []any{
			"10-a", eth("eth0", "198.18.0.5/24"),
			"20-b", route("fd00:198:18::/64", "", "net1"),
		}, wantErr: `plugin "20-b": route fd00:198:18::/64 dev net1`},
	} {
		for _, policy := range []merge.ConflictPolicy{merge.ConflictFail, merge.ConflictAggregate} {
			t.Run(fmt.Sprintf("%s/policy=%d", tc.name, policy), func(t *testing.T) {
				rec, _, err := merge.Networks(parts(t, tc.parts...), policy, merge.PreferIPv4)
				if tc.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				var rerr *merge.RouteInterfaceError
				if !errors.As(err, &rerr) || !errors.Is(err, api.ErrInvalidNetwork) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("merged %v, error %v; want a *merge.RouteInterfaceError containing %q", rec.GetNetwork(), err, tc.wantErr)
				}
			})
		}
	}
}

// TestNetworks_AggregateDropsInterfaceAddresses checks that under
// merge.ConflictAggregate the addresses of an interface dropped because an
// earlier plugin owns its name are dropped with it, and that the owners
// reflect only what was kept.
func TestNetworks_AggregateDropsInterfaceAddresses(t *testing.T) {
	withIPs := func(n *api.PodSandboxNetwork, ips ...string) *api.PodSandboxNetwork {
		n.Ips = append(n.Ips, ips...)
		return n
	}
	withItf := func(n *api.PodSandboxNetwork, name string, addrs ...string) *api.PodSandboxNetwork {
		n.Interfaces = append(n.Interfaces, eth(name, addrs...).Interfaces...)
		return n
	}
	for _, tc := range []struct {
		name         string
		second       *api.PodSandboxNetwork // 20-b's part; 10-a has eth0 198.18.0.5/24
		ips          []string
		owner4       string
		owner6       string
		warningNames string // a dropped address the warning names
	}{
		{
			name: "interface address", second: eth("eth0", "198.18.0.6/24"),
			ips: []string{"198.18.0.5"}, owner4: "10-a", warningNames: "198.18.0.6/24",
		},
		{
			name: "interface address also in ips", second: withIPs(eth("eth0", "198.18.0.6/24"), "198.18.0.6"),
			ips: []string{"198.18.0.5"}, owner4: "10-a", warningNames: "198.18.0.6/24",
		},
		{
			name: "same address as the kept interface", second: eth("eth0", "198.18.0.5/24"),
			ips: []string{"198.18.0.5"}, owner4: "10-a", warningNames: "198.18.0.5/24",
		},
		{
			name: "other interface kept", second: withItf(eth("eth0", "198.18.0.6/24"), "eth1", "fd00:198:18::6/64"),
			ips: []string{"198.18.0.5", "fd00:198:18::6"}, owner4: "10-a", owner6: "20-b", warningNames: "198.18.0.6/24",
		},
		{
			name: "address in ips only is kept", second: withIPs(eth("eth0", "198.18.0.7/24"), "198.18.0.6"),
			ips: []string{"198.18.0.5", "198.18.0.6"}, owner4: "10-a,20-b", warningNames: "198.18.0.7/24",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, warnings, err := merge.Networks(parts(t, "10-a", eth("eth0", "198.18.0.5/24"), "20-b", tc.second), merge.ConflictAggregate, merge.PreferIPv4)
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.GetNetwork().GetIps(); !slices.Equal(got, tc.ips) {
				t.Errorf("ips = %v, want %v", got, tc.ips)
			}
			if got := rec.GetOwners()[api.OwnerIPv4]; got != tc.owner4 {
				t.Errorf("IPv4 owners = %q, want %q", got, tc.owner4)
			}
			if got := rec.GetOwners()[api.OwnerIPv6]; got != tc.owner6 {
				t.Errorf("IPv6 owners = %q, want %q", got, tc.owner6)
			}
			if got := rec.GetOwners()[api.OwnerInterface("eth0")]; got != "10-a" {
				t.Errorf("eth0 owner = %q, want 10-a", got)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], `interface "eth0"`) || !strings.Contains(warnings[0], tc.warningNames) {
				t.Errorf("warnings = %q, want one about eth0 naming %s", warnings, tc.warningNames)
			}
		})
	}
}
