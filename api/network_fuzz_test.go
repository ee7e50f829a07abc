package api_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// FuzzNormalizeNetwork builds a pod network from arbitrary strings (two
// ips, two interfaces with two addresses each, two routes, a DNS server
// and an info entry; an empty string leaves the item out) and checks that
// NormalizeNetwork never panics, that its errors wrap ErrInvalidNetwork,
// and that what it accepts is normalized for good: normalizing it again
// gives the same network, and every address in it is a pod address by
// rules checked here independently of the package.
func FuzzNormalizeNetwork(f *testing.F) {
	f.Add("198.18.0.5", "fd00:198:18::5", "eth0", "02-42-C6-12-00-05", "198.18.0.5/24", "fd00:198:18::5/64",
		"net1", "198.18.1.7/31", "default", "198.18.0.1", "eth0", "fd00:198:18::/48", "fe80::1", "198.18.0.10", "k", uint32(1500))
	f.Add("::ffff:198.18.0.6", "198.18.0.6/24", "eth0", "", "::ffff:198.18.0.6/120", "", "", "", "::ffff:198.18.0.0/112",
		"198.18.0.1", "", "0.0.0.0/0", "169.254.1.1", "::ffff:198.18.0.10", "", uint32(0))
	f.Add("169.254.0.1", "198.18.0.0/24", "eth 0", "zz", "198.18.0.255/24", "fe80::1/64", "eth0", "255.255.255.255/32",
		"198.18.0.0", "fd00::1", "lo:1", "224.0.0.0/4", "0.0.0.0", "ff02::1", "", uint32(70000))
	f.Fuzz(func(t *testing.T, ip1, ip2, if1, mac1, a1, a2, if2, a3, dst1, gw1, dev1, dst2, gw2, dns, info string, mtu uint32) {
		in := &api.PodSandboxNetwork{Ips: nonEmpty(ip1, ip2)}
		if if1 != "" {
			in.Interfaces = append(in.Interfaces, &api.NetworkInterface{Name: if1, Mac: mac1, Mtu: mtu, Addresses: nonEmpty(a1, a2)})
		}
		if if2 != "" {
			in.Interfaces = append(in.Interfaces, &api.NetworkInterface{Name: if2, Addresses: nonEmpty(a3)})
		}
		if dst1 != "" {
			in.Routes = append(in.Routes, &api.NetworkRoute{Destination: dst1, Gateway: gw1, Interface: dev1})
		}
		if dst2 != "" {
			in.Routes = append(in.Routes, &api.NetworkRoute{Destination: dst2, Gateway: gw2})
		}
		if dns != "" {
			in.Dns = &api.NetworkDNS{Servers: []string{dns}}
		}
		if info != "" {
			in.Info = map[string]string{info: ip1}
		}
		out, err := api.NormalizeNetwork(in)
		if err != nil {
			if !errors.Is(err, api.ErrInvalidNetwork) {
				t.Fatalf("error %v does not wrap ErrInvalidNetwork", err)
			}
			return
		}
		again, err := api.NormalizeNetwork(out)
		if err != nil {
			t.Fatalf("normalized network %v is refused: %v", out, err)
		}
		if !proto.Equal(again, out) {
			t.Fatalf("normalizing twice changes the network:\nonce  %v\ntwice %v", out, again)
		}
		checkNormalized(t, out)
	})
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// checkNormalized checks a network NormalizeNetwork accepted against the
// contract's rules, written out independently.
func checkNormalized(t *testing.T, n *api.PodSandboxNetwork) {
	t.Helper()
	seen := map[netip.Addr]bool{}
	for _, s := range n.GetIps() {
		a, err := netip.ParseAddr(s)
		if err != nil || a.String() != s || !isPodAddr(a) {
			t.Fatalf("ips: %q is not a pod address in canonical form", s)
		}
		if seen[a] {
			t.Fatalf("ips: %s listed twice", a)
		}
		seen[a] = true
	}
	onItf := map[netip.Addr]bool{}
	for _, itf := range n.GetInterfaces() {
		if name := itf.GetName(); name == "" || len(name) > 15 || strings.ContainsAny(name, "/: \t\n") {
			t.Fatalf("interface name %q", name)
		}
		if mac := itf.GetMac(); mac != "" && (len(mac) != 17 || strings.ToLower(mac) != mac || strings.Count(mac, ":") != 5) {
			t.Fatalf("interface %q: MAC %q is not in lower-case colon form", itf.GetName(), mac)
		}
		if mtu := itf.GetMtu(); mtu != 0 && (mtu < 68 || mtu > 65535) {
			t.Fatalf("interface %q: MTU %d", itf.GetName(), mtu)
		}
		for _, s := range itf.GetAddresses() {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.String() != s || !isPodAddr(p.Addr()) || !hostBitsOK(p) {
				t.Fatalf("interface %q: %q is not a pod address in canonical CIDR form", itf.GetName(), s)
			}
			if onItf[p.Addr()] {
				t.Fatalf("interface %q: %s is on an interface already", itf.GetName(), p.Addr())
			}
			onItf[p.Addr()] = true
		}
	}
	for _, r := range n.GetRoutes() {
		p, err := netip.ParsePrefix(r.GetDestination())
		if err != nil || p != p.Masked() || p.Addr().Is4In6() {
			t.Fatalf("route destination %q is not a masked prefix", r.GetDestination())
		}
		if gw := r.GetGateway(); gw != "" {
			a, err := netip.ParseAddr(gw)
			if err != nil || a.String() != gw || a.Zone() != "" || a.Is4() != p.Addr().Is4() || a.Is4In6() ||
				a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a == netip.MustParseAddr("255.255.255.255") {
				t.Fatalf("route to %s: gateway %q is not a usable next hop", p, gw)
			}
		}
	}
	for _, s := range n.GetDns().GetServers() {
		a, err := netip.ParseAddr(s)
		if err != nil || a.String() != s || a.Zone() != "" || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() ||
			a == netip.MustParseAddr("255.255.255.255") {
			t.Fatalf("DNS server %q is not a usable address", s)
		}
	}
}

// isPodAddr reports whether a can be a pod's address: a plain IPv4 or
// IPv6 unicast address, not loopback, link-local or limited broadcast.
func isPodAddr(a netip.Addr) bool {
	return a.IsValid() && a.Zone() == "" && !a.Is4In6() && a.IsGlobalUnicast() && !a.IsLinkLocalUnicast() &&
		a != netip.MustParseAddr("255.255.255.255")
}

// hostBitsOK reports whether p's address is neither the network address
// nor the IPv4 broadcast address of its subnet, counting bit by bit.
func hostBitsOK(p netip.Prefix) bool {
	b := p.Addr().AsSlice()
	hostBits := len(b)*8 - p.Bits()
	if hostBits <= 1 { // IPv4 /31 and /32, IPv6 /127 and /128
		return true
	}
	zeros, ones := true, true
	for i := p.Bits(); i < len(b)*8; i++ {
		bit := b[i/8]>>(7-i%8)&1 == 1
		zeros = zeros && !bit
		ones = ones && bit
	}
	return !zeros && (p.Addr().Is6() || !ones)
}
