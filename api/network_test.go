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
				Ips: []string{"198.18.0.5/24", "FD00:198:18::0005", "::ffff:198.18.0.6", "198.18.0.5"},
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
		t.Run(tc.name, func(t *testing.T) {
			got, err := api.NormalizeNetwork(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(err, api.ErrInvalidNetwork) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
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
