package cni_test

import (
	"net"
	"slices"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/nrinet/nrinet/plugins/cni"
)

func ipnet(t *testing.T, s string) net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return net.IPNet{IP: ip, Mask: n.Mask}
}

func TestConvertResult(t *testing.T) {
	const netns = "/var/run/netns/nrcni-abc"
	idx := func(i int) *int { return &i }
	res := &current.Result{
		CNIVersion: "1.0.0",
		Interfaces: []*current.Interface{
			{Name: "br0", Mac: "02:00:00:00:00:01"},
			{Name: "veth1", Mac: "02:00:00:00:00:02"},
			{Name: "eth0", Mac: "02:00:00:00:00:03", Mtu: 1450, Sandbox: netns},
		},
		IPs: []*current.IPConfig{
			{Interface: idx(2), Address: ipnet(t, "198.18.100.5/24"), Gateway: net.ParseIP("198.18.100.1")},
			{Interface: idx(2), Address: ipnet(t, "fd00:198:18:100::5/64")},
			{Interface: idx(0), Address: ipnet(t, "198.18.100.1/24")}, // the bridge's, on the host
		},
		Routes: []*types.Route{
			{Dst: ipnet(t, "0.0.0.0/0")},
			{Dst: ipnet(t, "198.18.200.7/24"), GW: net.ParseIP("198.18.100.1")},
			{Dst: ipnet(t, "0.0.0.0/0"), GW: net.ParseIP("198.18.100.9")}, // duplicate destination
		},
		DNS: types.DNS{Nameservers: []string{"198.18.0.53"}, Domain: "example.test", Search: []string{"svc.example.test"}, Options: []string{"ndots:5"}},
	}
	list := &libcni.NetworkConfigList{Name: "nrinet-test", CNIVersion: "1.0.0"}
	n, err := cni.ConvertResult(res, netns, list)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"198.18.100.5", "fd00:198:18:100::5"}; !slices.Equal(n.GetIps(), want) {
		t.Errorf("ips = %v, want %v", n.GetIps(), want)
	}
	if len(n.GetInterfaces()) != 1 {
		t.Fatalf("interfaces = %v, want eth0 only", n.GetInterfaces())
	}
	itf := n.GetInterfaces()[0]
	if itf.GetName() != "eth0" || itf.GetMac() != "02:00:00:00:00:03" || itf.GetMtu() != 1450 ||
		!slices.Equal(itf.GetAddresses(), []string{"198.18.100.5/24", "fd00:198:18:100::5/64"}) {
		t.Errorf("interface = %v", itf)
	}
	var routes []string
	for _, r := range n.GetRoutes() {
		routes = append(routes, r.GetDestination()+" via "+r.GetGateway()+" dev "+r.GetInterface())
	}
	if want := []string{"0.0.0.0/0 via  dev eth0", "198.18.200.0/24 via 198.18.100.1 dev eth0"}; !slices.Equal(routes, want) {
		t.Errorf("routes = %q, want %q", routes, want)
	}
	d := n.GetDns()
	if !slices.Equal(d.GetServers(), []string{"198.18.0.53"}) || !slices.Equal(d.GetSearches(), []string{"example.test", "svc.example.test"}) ||
		!slices.Equal(d.GetOptions(), []string{"ndots:5"}) {
		t.Errorf("dns = %v", d)
	}
	if n.GetInfo()[cni.InfoNetwork] != "nrinet-test" || n.GetInfo()[cni.InfoCNIVersion] != "1.0.0" {
		t.Errorf("info = %v", n.GetInfo())
	}
}

func TestConvertResult_InvalidResult(t *testing.T) {
	res := &current.Result{CNIVersion: "1.0.0",
		Interfaces: []*current.Interface{{Name: "eth0", Mac: "zz", Sandbox: "/ns"}}}
	_, err := cni.ConvertResult(res, "/ns", &libcni.NetworkConfigList{Name: "n", CNIVersion: "1.0.0"})
	mustContain(t, err, "not a valid pod network", `MAC "zz"`)
}
