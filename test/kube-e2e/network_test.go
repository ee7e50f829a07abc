package kubee2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// netnsDir is where iproute2 keeps named network namespaces (and nrinetd
// its pod namespaces).
const netnsDir = "/run/netns"

// The cluster's address plan. Pod CIDRs exist only inside the nodes'
// network namespaces, never on the host, so they need not avoid other
// suites' subnets; the underlay (on the host) does, see pickUnderlay.
var (
	clusterCIDR4 = netip.MustParsePrefix("198.19.0.0/17")
	clusterCIDR6 = netip.MustParsePrefix("fd00:198:18:d000::/56")
	serviceCIDR4 = netip.MustParsePrefix("198.19.255.0/24")
	serviceCIDR6 = netip.MustParsePrefix("fd00:198:18:ffff::/112")
)

// Node CIDR sizes the controller-manager allocates.
const (
	nodeMask4 = 24
	nodeMask6 = 64
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// underlay is the L2 network of the control plane and the nodes: a bridge
// in the host's network namespace with the apiserver's address (.1 and
// ::1 of its subnets), and veths to the nodes and the outside namespace.
type underlay struct {
	t          testing.TB
	bridge     string
	net4, net6 netip.Prefix
	// next is the last host number handed out (addr).
	next int
	// teardown deletes the hosts (newHost), in the underlay's cleanup.
	teardown []func()
}

// newUnderlay creates the bridge nrkb<token> on free subnets (pickUnderlay)
// with the addresses .1 and ::1, and deletes it by name when the test
// ends. The IPv6 address skips duplicate address detection: a bridge
// without ports has no carrier, and a tentative address cannot be bound.
func newUnderlay(t testing.TB, token string) *underlay {
	t.Helper()
	net4, net6 := pickUnderlay(t)
	u := &underlay{t: t, bridge: "nrkb" + token, net4: net4, net6: net6, next: 1}
	run(t, "ip", "link", "add", u.bridge, "type", "bridge")
	t.Cleanup(func() {
		for _, f := range slices.Backward(u.teardown) {
			f()
		}
		deleteLink(t, "", u.bridge)
	})
	run(t, "ip", "addr", "add", u.gw4().String()+"/24", "dev", u.bridge)
	run(t, "ip", "addr", "add", u.gw6().String()+"/64", "dev", u.bridge, "nodad")
	run(t, "ip", "link", "set", u.bridge, "up")
	return u
}

// gw4 and gw6 are the host's (the apiserver's) addresses on the underlay.
func (u *underlay) gw4() netip.Addr { return u.net4.Addr().Next() }
func (u *underlay) gw6() netip.Addr { return u.net6.Addr().Next() }

// addr hands out the next host number's addresses in both subnets.
func (u *underlay) addr() (netip.Addr, netip.Addr) {
	u.next++
	a4 := u.net4.Addr().As4()
	a4[3] = byte(u.next)
	a6 := u.net6.Addr().As16()
	a6[15] = byte(u.next)
	return netip.AddrFrom4(a4), netip.AddrFrom16(a6)
}

// pickUnderlay returns a random /24 of 198.18.0.0/16 and the /64
// fd00:198:18:c0NN::/64 of the same number that overlap no address or
// route on the host, so that suites running at the same time do not share
// a subnet.
func pickUnderlay(t testing.TB) (v4, v6 netip.Prefix) {
	t.Helper()
	used := hostPrefixes(t)
	for range 64 {
		n := 1 + mrand.IntN(254)
		v4 = netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(n), 0}), 24)
		v6 = netip.MustParsePrefix(fmt.Sprintf("fd00:198:18:c%03x::/64", n))
		if !slices.ContainsFunc(used, func(p netip.Prefix) bool { return p.Overlaps(v4) || p.Overlaps(v6) }) {
			return v4, v6
		}
	}
	t.Fatalf("no free /24 in 198.18.0.0/16 after 64 tries; host prefixes: %v", used)
	return
}

// hostPrefixes lists the host's interface prefixes and route destinations.
func hostPrefixes(t testing.TB) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(run(t, "ip", "-j", "addr", "show")), &links); err != nil {
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
		var rs []struct {
			Dst string `json:"dst"`
		}
		if err := json.Unmarshal([]byte(run(t, "ip", "-j", family, "route", "show")), &rs); err != nil {
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

// host is a network namespace attached to the underlay: a node or the
// outside.
type host struct {
	// netns is the namespace's name; netnsPath its path.
	netns, netnsPath string
	// veth is the host end of its link to the underlay bridge (in the
	// host's namespace); inside, the other end is eth0.
	veth         string
	addr4, addr6 netip.Addr
}

// newHost creates the network namespace name with a veth to the
// underlay: eth0 inside with the next underlay addresses, the host end
// vethName on the bridge. It enables forwarding in the namespace when
// forward is set (a node). The underlay's cleanup deletes the namespace
// (and with it the veth pair) by name: after the control plane stopped,
// so that a connection to the apiserver left by a process of the host
// (or of a pod behind it) that is gone is reset by the host's kernel,
// instead of staying open towards an address no longer there, which
// keeps kube-apiserver's graceful shutdown waiting up to its request
// timeout (60 s) and the test's stop of it failing.
func newHost(t testing.TB, u *underlay, name, vethName string, forward bool) *host {
	t.Helper()
	h := &host{netns: name, netnsPath: filepath.Join(netnsDir, name), veth: vethName}
	h.addr4, h.addr6 = u.addr()
	run(t, "ip", "netns", "add", name)
	u.teardown = append(u.teardown, func() {
		deleteLink(u.t, "", h.veth)
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			u.t.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
	})
	run(t, "ip", "link", "add", vethName, "type", "veth", "peer", "name", "eth0", "netns", name)
	run(t, "ip", "link", "set", vethName, "master", u.bridge, "up")
	ns := func(args ...string) { run(t, "ip", append([]string{"-n", name}, args...)...) }
	ns("link", "set", "lo", "up")
	ns("addr", "add", h.addr4.String()+"/24", "dev", "eth0")
	ns("addr", "add", h.addr6.String()+"/64", "dev", "eth0", "nodad")
	// Like a real node's uplink, which has been up for long: no link-local
	// address waiting in duplicate address detection, during which the
	// kernel would not solicit neighbours for packets it forwards.
	sysctl(t, h.netnsPath, "net/ipv6/conf/eth0/accept_dad", "0")
	ns("link", "set", "eth0", "up")
	if forward {
		sysctl(t, h.netnsPath, "net/ipv4/ip_forward", "1")
		sysctl(t, h.netnsPath, "net/ipv6/conf/all/forwarding", "1")
	}
	return h
}

// sysctl writes a network sysctl (under /proc/sys) of the namespace at
// netnsPath: /proc/sys/net shows the namespace of the thread that opens
// the file.
func sysctl(t testing.TB, netnsPath, key, value string) {
	t.Helper()
	err := inNetNS(netnsPath, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
	})
	if err != nil {
		t.Fatalf("sysctl %s=%s in %s: %v", key, value, netnsPath, err)
	}
}

// deleteLink deletes a link by name in the named namespace ("" for the
// host's); a missing one is fine.
func deleteLink(t testing.TB, netns, name string) {
	t.Helper()
	args := []string{"link", "del", "dev", name}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Cannot find device") {
		t.Errorf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ping sends one ICMP echo from inside the named namespace to addr and
// returns an error with ping's output unless a reply from addr came back.
func ping(netns string, addr netip.Addr) error {
	out, err := exec.Command("ip", "netns", "exec", netns, "ping", "-c", "1", "-W", "2", addr.String()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "from "+addr.String()) {
		return fmt.Errorf("ping %s from netns %s: %v\n%s", addr, netns, err, out)
	}
	return nil
}

// familyOf names an address's family.
func familyOf(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
