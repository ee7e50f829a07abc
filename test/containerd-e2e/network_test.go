package containerde2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pickSubnets returns a random /24 of 198.18.0.0/15 and the /64
// fd00:198:18:cNNN::/64 of the same number (0 to 511) that overlap no
// address or route on the host, so that tests running at the same time do
// not share a subnet.
func pickSubnets(t testing.TB) (v4, v6 netip.Prefix) {
	t.Helper()
	used := hostPrefixes(t)
	for range 64 {
		n := rand.IntN(512)
		v4 = netip.PrefixFrom(netip.AddrFrom4([4]byte{198, byte(18 + n/256), byte(n % 256), 0}), 24)
		v6 = netip.MustParsePrefix(fmt.Sprintf("fd00:198:18:c%03x::/64", n))
		if !slices.ContainsFunc(used, func(p netip.Prefix) bool { return p.Overlaps(v4) || p.Overlaps(v6) }) {
			return v4, v6
		}
	}
	t.Fatalf("no free /24 in 198.18.0.0/15 after 64 tries; host prefixes: %v", used)
	return
}

// hostPrefixes lists the host's interface prefixes and route destinations.
func hostPrefixes(t testing.TB) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	addrs, err := exec.Command("ip", "-j", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip -j addr show: %v", err)
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(addrs, &links); err != nil {
		t.Fatalf("ip -j addr show: %v", err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				if p, err := ip.Prefix(a.PrefixLen); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	for _, family := range []string{"-4", "-6"} {
		routes, err := exec.Command("ip", "-j", family, "route", "show").Output()
		if err != nil {
			t.Fatalf("ip -j %s route show: %v", family, err)
		}
		var rs []struct {
			Dst string `json:"dst"`
		}
		if err := json.Unmarshal(routes, &rs); err != nil {
			t.Fatalf("ip -j %s route show: %v", family, err)
		}
		for _, r := range rs {
			if p, err := netip.ParsePrefix(r.Dst); err == nil {
				out = append(out, p)
			} else if a, err := netip.ParseAddr(r.Dst); err == nil {
				out = append(out, netip.PrefixFrom(a, a.BitLen()))
			}
		}
	}
	return out
}

// podNet is a pod's network as seen from inside its container and
// through CRI.
type podNet struct {
	// cri are the addresses crictl inspectp reports, ip first.
	cri []netip.Addr
	// addrs are eth0's global addresses with their prefix lengths.
	addrs []netip.Prefix
	// ifaces lists the container's interfaces.
	ifaces []string
	// defaults are the default routes: "via GATEWAY dev IFACE", v4 then v6.
	defaults []string
}

// podNetwork reads a pod's network: crictl inspectp's addresses, and
// inside its container `ip -o addr`, `ip -o link`, `ip route` and `ip -6
// route`.
func (c *containerd) podNetwork(p *pod) podNet {
	c.t.Helper()
	var n podNet
	for _, s := range c.inspectp(p.id).IPs() {
		a, err := netip.ParseAddr(s)
		if err != nil {
			c.t.Fatalf("pod %s: CRI address %q: %v", p.name, s, err)
		}
		n.cri = append(n.cri, a)
	}
	for _, l := range strings.Split(strings.TrimSpace(c.exec(p, "ip", "-o", "link")), "\n") {
		// "2: eth0@if7: <...>"
		if f := strings.Fields(l); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			n.ifaces = append(n.ifaces, name)
		}
	}
	for _, l := range strings.Split(c.exec(p, "ip", "-o", "addr", "show", "dev", "eth0", "scope", "global"), "\n") {
		f := strings.Fields(l)
		for i := range f {
			if (f[i] == "inet" || f[i] == "inet6") && i+1 < len(f) {
				pfx, err := netip.ParsePrefix(f[i+1])
				if err != nil {
					c.t.Fatalf("pod %s: ip addr: %v in %q", p.name, err, l)
				}
				n.addrs = append(n.addrs, pfx)
			}
		}
	}
	for _, family := range [][]string{{"ip", "route"}, {"ip", "-6", "route"}} {
		for _, l := range strings.Split(c.exec(p, family...), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "default "); ok {
				f := strings.Fields(rest)
				if len(f) >= 4 {
					n.defaults = append(n.defaults, strings.Join(f[:4], " "))
				}
			}
		}
	}
	return n
}

// shape describes a pod network relative to its ipNet, so that two
// instances with different subnets compare: interface names, and addresses
// and gateways as "v4+N/len" and "v6+N/len", N the offset in the subnet.
type shape struct {
	Ifaces   []string
	CRI      []string
	Addrs    []string
	Defaults []string
}

func (s shape) String() string {
	return fmt.Sprintf("interfaces %v, CRI addresses %v, eth0 %v, default routes %v", s.Ifaces, s.CRI, s.Addrs, s.Defaults)
}

// shapeOf describes n relative to the network net.
func shapeOf(net ipNet, n podNet) shape {
	rel := func(a netip.Addr) string {
		for _, p := range []struct {
			name string
			pfx  netip.Prefix
		}{{"v4", net.v4}, {"v6", net.v6}} {
			if p.pfx.Contains(a) {
				return fmt.Sprintf("%s+%d", p.name, offset(p.pfx.Addr(), a))
			}
		}
		return a.String() + " (outside the network)"
	}
	var s shape
	s.Ifaces = slices.Sorted(slices.Values(n.ifaces))
	for _, a := range n.cri {
		s.CRI = append(s.CRI, rel(a))
	}
	for _, p := range n.addrs {
		s.Addrs = append(s.Addrs, fmt.Sprintf("%s/%d", rel(p.Addr()), p.Bits()))
	}
	for _, d := range n.defaults {
		f := strings.Fields(d) // via GW dev IFACE
		if gw, err := netip.ParseAddr(f[1]); err == nil {
			f[1] = rel(gw)
		}
		s.Defaults = append(s.Defaults, strings.Join(f, " "))
	}
	return s
}

// offset is a's distance from base, within the last 64 bits.
func offset(base, a netip.Addr) uint64 {
	b16, a16 := base.As16(), a.As16()
	return binary.BigEndian.Uint64(a16[8:]) - binary.BigEndian.Uint64(b16[8:])
}

// ping pings addr once from inside the pod's container and checks that
// the reply came from addr.
func (c *containerd) ping(from *pod, addr netip.Addr) {
	c.t.Helper()
	cmd := "ping"
	if addr.Is6() {
		cmd = "ping6"
	}
	out, errOut, err := c.crictl("exec", "--sync", "--timeout", "10", from.ctrID, cmd, "-c", "1", "-W", "2", addr.String())
	if err != nil || !strings.Contains(out, "64 bytes from "+addr.String()+":") || !strings.Contains(out, "1 packets received") {
		c.t.Errorf("%s %s from pod %s: %v\n%s%s\nwant a reply from %s", cmd, addr, from.name, err, out, errOut, addr)
	}
}
