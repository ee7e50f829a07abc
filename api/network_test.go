package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

func TestNormalizeNetwork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *api.PodSandboxNetwork
		want    *api.PodSandboxNetwork
		wantErr string
	}{
		{name: "nil", in: nil, want: nil},
		{name: "empty DNS is no DNS", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{}}, want: &api.PodSandboxNetwork{}},
		{
			name: "IPv6 default route and mapped prefixes",
			in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{
				{Destination: "default", Gateway: "fd00:198:18::1"},
				{Destination: "::ffff:198.18.0.0/112", Gateway: "198.18.0.1"},
			}},
			want: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{
				{Destination: "::/0", Gateway: "fd00:198:18::1"},
				{Destination: "198.18.0.0/16", Gateway: "198.18.0.1"},
			}},
		},
		{
			name: "canonical forms",
			in: &api.PodSandboxNetwork{
				Ips: []string{"198.18.0.5/24", "FD00:198:18::0005", "::ffff:198.18.0.6"},
				Interfaces: []*api.NetworkInterface{{
					Name: "eth0", Mac: "02-42-C6-12-00-05", Mtu: 1500,
					Addresses: []string{"198.18.0.5/24", "fd00:198:18::5/64"},
				}},
				Routes: []*api.NetworkRoute{
					{Destination: "default", Gateway: "198.18.0.1", Interface: "eth0"},
					{Destination: "fd00:198:18::1/48", Gateway: "fd00:198:18::1"},
				},
				Dns:  &api.NetworkDNS{Servers: []string{"198.18.0.10"}, Searches: []string{"svc.cluster.local"}, Options: []string{"ndots:5"}},
				Info: map[string]string{"podnet.nrinet.io/bridge": "nrinet0"},
			},
			want: &api.PodSandboxNetwork{
				Ips: []string{"198.18.0.5", "fd00:198:18::5", "198.18.0.6"},
				Interfaces: []*api.NetworkInterface{{
					Name: "eth0", Mac: "02:42:c6:12:00:05", Mtu: 1500,
					Addresses: []string{"198.18.0.5/24", "fd00:198:18::5/64"},
				}},
				Routes: []*api.NetworkRoute{
					{Destination: "0.0.0.0/0", Gateway: "198.18.0.1", Interface: "eth0"},
					{Destination: "fd00:198:18::/48", Gateway: "fd00:198:18::1"},
				},
				Dns:  &api.NetworkDNS{Servers: []string{"198.18.0.10"}, Searches: []string{"svc.cluster.local"}, Options: []string{"ndots:5"}},
				Info: map[string]string{"podnet.nrinet.io/bridge": "nrinet0"},
			},
		},
		{name: "garbage address", in: &api.PodSandboxNetwork{Ips: []string{"198.18.0.300"}}, wantErr: `address "198.18.0.300"`},
		{name: "loopback", in: &api.PodSandboxNetwork{Ips: []string{"127.0.0.1"}}, wantErr: `"127.0.0.1" is a loopback address`},
		{name: "unspecified", in: &api.PodSandboxNetwork{Ips: []string{"::"}}, wantErr: `"::" is unspecified`},
		{name: "multicast", in: &api.PodSandboxNetwork{Ips: []string{"224.0.0.1"}}, wantErr: `"224.0.0.1" is a multicast address`},
		{name: "zone", in: &api.PodSandboxNetwork{Ips: []string{"fe80::1%eth0"}}, wantErr: "zones are not allowed"},
		{name: "mapped loopback", in: &api.PodSandboxNetwork{Ips: []string{"::ffff:127.0.0.1"}}, wantErr: "loopback"},
		{name: "mapped unspecified", in: &api.PodSandboxNetwork{Ips: []string{"::ffff:0.0.0.0"}}, wantErr: "unspecified"},
		{name: "mapped loopback on interface", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"::ffff:127.0.0.1/120"}}}}, wantErr: "loopback"},
		{name: "control character in name", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth\r0"}}}, wantErr: "not a valid interface name"},
		{name: "zoned gateway", in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: "::/0", Gateway: "fe80::1%eth0"}}}, wantErr: "zones are not allowed"},
		{name: "mapped DNS server", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{Servers: []string{"::ffff:0.0.0.0"}}}, wantErr: "DNS server"},
		{name: "bad MAC", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Mac: "02:42:zz:00:00:01"}}}, wantErr: `MAC "02:42:zz:00:00:01"`},
		{name: "long MAC", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "ib0", Mac: "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"}}}, wantErr: "not a 48-bit"},
		{name: "bare interface address", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5"}}}}, wantErr: "want a CIDR"},
		{name: "bad interface name", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0/1"}}}, wantErr: `interface "eth0/1": not a valid interface name`},
		{name: "duplicate interface", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0"}, {Name: "eth0"}}}, wantErr: "listed twice"},
		{name: "bad MTU", in: &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Mtu: 70000}}}, wantErr: "MTU 70000"},
		{name: "bad route", in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: "198.18.0.0"}}}, wantErr: `route destination "198.18.0.0"`},
		{name: "route gateway family", in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: "0.0.0.0/0", Gateway: "fd00::1"}}}, wantErr: "other IP family"},
		{name: "bad DNS server", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{Servers: []string{"dns.example"}}}, wantErr: `DNS server "dns.example"`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkNormalize(t, tc.in, tc.want, tc.wantErr) })
	}
}

// itf0 is a network with one interface, eth0, holding addrs.
func itf0(addrs ...string) *api.PodSandboxNetwork {
	return &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: addrs}}}
}

// gw is a network with one route to dst via gateway.
func gw(dst, gateway string) *api.PodSandboxNetwork {
	return &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: dst, Gateway: gateway}}}
}

// TestNormalizeNetwork_Addresses covers what a pod address may be, wherever
// it appears: duplicates, broadcast, network, link-local, unspecified and
// multicast addresses.
func TestNormalizeNetwork_Addresses(t *testing.T) {
	two := &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{
		{Name: "eth0", Addresses: []string{"198.18.0.5/24"}},
		{Name: "eth1", Addresses: []string{"198.18.0.5/16"}},
	}}
	for _, tc := range []struct {
		name    string
		in      *api.PodSandboxNetwork
		wantErr string // empty: accepted as it is
	}{
		// Duplicates.
		{name: "duplicate in ips", in: ipsNet("198.18.0.5", "198.18.0.5"), wantErr: `address "198.18.0.5": 198.18.0.5 is listed twice in ips`},
		{name: "duplicate in ips, other spelling", in: ipsNet("198.18.0.5/24", "::ffff:198.18.0.5"), wantErr: `address "::ffff:198.18.0.5": 198.18.0.5 is listed twice in ips`},
		{name: "duplicate IPv6 in ips", in: ipsNet("fd00:198:18::5", "FD00:198:18:0::5"), wantErr: `address "FD00:198:18:0::5": fd00:198:18::5 is listed twice in ips`},
		{name: "same IP on two interfaces", in: two, wantErr: `interface "eth1": address "198.18.0.5/16": 198.18.0.5 is already an address of interface "eth0"`},
		{name: "same IP twice on one interface", in: itf0("198.18.0.5/24", "198.18.0.5/24"), wantErr: `interface "eth0": address "198.18.0.5/24": 198.18.0.5 is already an address of interface "eth0"`},
		{name: "ips entry that is an interface address", in: &api.PodSandboxNetwork{Ips: []string{"198.18.0.5"}, Interfaces: itf0("198.18.0.5/24").Interfaces}},
		// Broadcast.
		{name: "limited broadcast in ips", in: ipsNet("255.255.255.255"), wantErr: `address "255.255.255.255" is the limited broadcast address`},
		{name: "limited broadcast on interface", in: itf0("255.255.255.255/32"), wantErr: `address "255.255.255.255/32" is the limited broadcast address`},
		{name: "limited broadcast gateway", in: gw("0.0.0.0/0", "255.255.255.255"), wantErr: `gateway "255.255.255.255" is not a usable next hop`},
		{name: "limited broadcast DNS server", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{Servers: []string{"255.255.255.255"}}}, wantErr: `DNS server "255.255.255.255"`},
		{name: "subnet broadcast on interface", in: itf0("198.18.0.255/24"), wantErr: `address "198.18.0.255/24" is the broadcast address of 198.18.0.0/24`},
		{name: "subnet broadcast as ips CIDR", in: ipsNet("198.18.1.255/23"), wantErr: `address "198.18.1.255/23" is the broadcast address of 198.18.0.0/23`},
		// Network addresses (host bits all zero).
		{name: "network address on interface", in: itf0("198.18.0.0/24"), wantErr: `address "198.18.0.0/24" is the network address of 198.18.0.0/24`},
		{name: "IPv6 network address on interface", in: itf0("fd00:198:18::/64"), wantErr: `address "fd00:198:18::/64" is the network address of fd00:198:18::/64`},
		{name: "mapped network address on interface", in: itf0("::ffff:198.18.0.0/120"), wantErr: `is the network address of 198.18.0.0/24`},
		{name: "network address as ips CIDR", in: ipsNet("198.18.0.0/24"), wantErr: `address "198.18.0.0/24" is the network address of 198.18.0.0/24`},
		{name: "IPv4 /31 both ends", in: itf0("198.18.0.0/31", "198.18.0.3/31")},
		{name: "IPv4 /32", in: itf0("198.18.0.0/32", "198.18.0.255/32")},
		{name: "IPv6 /127 and /128", in: itf0("fd00:198:18::/127", "fd00:198:18::2/128")},
		{name: "host address with zero octet", in: itf0("198.18.1.0/23", "198.18.0.255/23", "fd00:198:18::1:0/64")},
		// Link-local.
		{name: "IPv4 link-local in ips", in: ipsNet("169.254.1.5"), wantErr: `address "169.254.1.5" is a link-local address`},
		{name: "IPv6 link-local in ips", in: ipsNet("fe80::5"), wantErr: `address "fe80::5" is a link-local address`},
		{name: "mapped link-local in ips", in: ipsNet("::ffff:169.254.1.5"), wantErr: `address "::ffff:169.254.1.5" is a link-local address`},
		{name: "IPv4 link-local on interface", in: itf0("169.254.1.5/16"), wantErr: `address "169.254.1.5/16" is a link-local address`},
		{name: "IPv6 link-local on interface", in: itf0("fe80::5/64"), wantErr: `address "fe80::5/64" is a link-local address`},
		{name: "link-local gateways", in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{
			{Destination: "0.0.0.0/0", Gateway: "169.254.1.1"}, {Destination: "::/0", Gateway: "fe80::1"},
		}}},
		// Unspecified and multicast, wherever an address appears.
		{name: "unspecified in ips", in: ipsNet("0.0.0.0"), wantErr: `address "0.0.0.0" is unspecified`},
		{name: "unspecified on interface", in: itf0("::/64"), wantErr: `address "::/64" is unspecified`},
		{name: "unspecified gateway", in: gw("0.0.0.0/0", "0.0.0.0"), wantErr: `gateway "0.0.0.0" is not a usable next hop`},
		{name: "unspecified DNS server", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{Servers: []string{"::"}}}, wantErr: `DNS server "::"`},
		{name: "multicast in ips", in: ipsNet("ff02::1"), wantErr: `address "ff02::1" is a multicast address`},
		{name: "multicast on interface", in: itf0("224.0.0.5/24"), wantErr: `address "224.0.0.5/24" is a multicast address`},
		{name: "multicast gateway", in: gw("::/0", "ff02::2"), wantErr: `gateway "ff02::2" is not a usable next hop`},
		{name: "multicast DNS server", in: &api.PodSandboxNetwork{Dns: &api.NetworkDNS{Servers: []string{"224.0.0.251"}}}, wantErr: `DNS server "224.0.0.251"`},
		{name: "multicast route destination", in: &api.PodSandboxNetwork{Routes: []*api.NetworkRoute{{Destination: "224.0.0.0/4", Interface: "eth0"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.in
			if tc.wantErr != "" {
				want = nil
			}
			checkNormalize(t, tc.in, want, tc.wantErr)
		})
	}
}

// ipsNet is a network with only ips.
func ipsNet(ips ...string) *api.PodSandboxNetwork { return &api.PodSandboxNetwork{Ips: ips} }

func checkNormalize(t *testing.T, in, want *api.PodSandboxNetwork, wantErr string) {
	t.Helper()
	got, err := api.NormalizeNetwork(in)
	if wantErr != "" {
		if !errors.Is(err, api.ErrInvalidNetwork) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestNetworkAddresses(t *testing.T) {
	n, err := api.NormalizeNetwork(&api.PodSandboxNetwork{
		Ips:        []string{"198.18.0.5"},
		Interfaces: []*api.NetworkInterface{{Name: "eth0", Addresses: []string{"198.18.0.5/24", "fd00:198:18::5/64"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(api.NetworkAddresses(n)); got != "[198.18.0.5 fd00:198:18::5]" {
		t.Fatalf("NetworkAddresses = %s", got)
	}
}

func ExampleNormalizeNetwork() {
	n, err := api.NormalizeNetwork(&api.PodSandboxNetwork{
		Interfaces: []*api.NetworkInterface{{Name: "eth0", Mac: "02-42-C6-12-00-05", Addresses: []string{"198.18.0.5/24"}}},
		Routes:     []*api.NetworkRoute{{Destination: "default", Gateway: "198.18.0.1"}},
	})
	fmt.Println(n.GetInterfaces()[0].GetMac(), n.GetRoutes()[0].GetDestination(), err)
	_, err = api.NormalizeNetwork(&api.PodSandboxNetwork{Ips: []string{"127.0.0.1"}})
	fmt.Println(err)
	// Output:
	// 02:42:c6:12:00:05 0.0.0.0/0 <nil>
	// invalid pod network: address "127.0.0.1" is a loopback address
}
