package kube_test

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/kube"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// nodeNS makes a network namespace standing for a node: an "underlay"
// interface (a veth whose peer is up in the same namespace) with 198.18.100.1/24 and fd00:198:18:100::1/64, the
// other nodes' InternalIPs being in those subnets. It returns the
// namespace's name and a netlink handle in it.
func nodeNS(t *testing.T) (string, *netlink.Handle) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	name := "nrkr" + randHex(4)
	path := testutil.NewNetNS(t, name)
	for _, args := range [][]string{
		{"link", "add", "underlay", "type", "veth", "peer", "name", "underlay-peer"},
		{"link", "set", "underlay-peer", "up"},
		{"addr", "add", "198.18.100.1/24", "dev", "underlay"},
		{"addr", "add", "fd00:198:18:100::1/64", "dev", "underlay", "nodad"},
		{"link", "set", "underlay", "up"},
	} {
		testutil.Run(t, "ip", append([]string{"-n", name}, args...)...)
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return name, h
}

// ipRoutes lists the routes of protocol 78 in the namespace as `ip route`
// shows them, as "DST via GW", both families, sorted.
func ipRoutes(t *testing.T, ns string) []string {
	t.Helper()
	return ipRouteList(t, ns, "proto", "78")
}

// ipRouteList lists the namespace's routes that match the selector, as
// "DST via GW" (or "DST dev IF"), both families, sorted.
func ipRouteList(t *testing.T, ns string, selector ...string) []string {
	t.Helper()
	var out []string
	for _, fam := range []string{"-4", "-6"} {
		s := testutil.Run(t, "ip", append([]string{"-n", ns, fam, "route", "show"}, selector...)...)
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			if f := strings.Fields(l); len(f) >= 3 {
				out = append(out, strings.Join(f[:3], " "))
			}
		}
	}
	slices.Sort(out)
	return out
}

func route(dst, via string) kube.Route {
	return kube.Route{Dst: mustPrefix(dst), Via: mustAddr(via), Node: "n"}
}

func TestRouterInNetNS(t *testing.T) {
	ns, h := nodeNS(t)
	r, err := kube.NewRouter(kube.WithRouterHandle(h))
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's route, which the Router must leave alone.
	testutil.Run(t, "ip", "-n", ns, "route", "add", "198.18.9.0/24", "via", "198.18.100.9", "proto", "static")

	steps := []struct {
		name        string
		want        []kube.Route
		wantChanged bool
		wantErr     string
		wantIP      []string
	}{
		{
			name:        "add",
			want:        []kube.Route{route("198.18.2.0/24", "198.18.100.2"), route("fd00:198:18:2::/64", "fd00:198:18:100::2")},
			wantChanged: true,
			wantIP:      []string{"198.18.2.0/24 via 198.18.100.2", "fd00:198:18:2::/64 via fd00:198:18:100::2"},
		},
		{
			name:   "again: nothing to do",
			want:   []kube.Route{route("198.18.2.0/24", "198.18.100.2"), route("fd00:198:18:2::/64", "fd00:198:18:100::2")},
			wantIP: []string{"198.18.2.0/24 via 198.18.100.2", "fd00:198:18:2::/64 via fd00:198:18:100::2"},
		},
		{
			name:        "change a gateway, add a route",
			want:        []kube.Route{route("198.18.2.0/24", "198.18.100.5"), route("198.18.3.0/24", "198.18.100.3"), route("fd00:198:18:2::/64", "fd00:198:18:100::2")},
			wantChanged: true,
			wantIP:      []string{"198.18.2.0/24 via 198.18.100.5", "198.18.3.0/24 via 198.18.100.3", "fd00:198:18:2::/64 via fd00:198:18:100::2"},
		},
		{
			name:        "a destination someone else routes, and a deletion",
			want:        []kube.Route{route("198.18.9.0/24", "198.18.100.4"), route("198.18.3.0/24", "198.18.100.3")},
			wantChanged: true,
			wantErr:     "a route to 198.18.9.0/24 of protocol static is there, not nri-podnet's: left alone",
			wantIP:      []string{"198.18.3.0/24 via 198.18.100.3"},
		},
		{
			name:        "a route deleted by hand comes back",
			want:        []kube.Route{route("198.18.3.0/24", "198.18.100.3")},
			wantChanged: true,
			wantIP:      []string{"198.18.3.0/24 via 198.18.100.3"},
		},
	}
	for i, s := range steps {
		if i == len(steps)-1 {
			testutil.Run(t, "ip", "-n", ns, "route", "del", "198.18.3.0/24")
		}
		changed, err := r.Sync(s.want)
		if s.wantErr == "" && err != nil || s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)) {
			t.Errorf("%s: Sync error %v, want %q", s.name, err, s.wantErr)
		}
		if changed != s.wantChanged {
			t.Errorf("%s: changed = %v, want %v", s.name, changed, s.wantChanged)
		}
		if got := ipRoutes(t, ns); !slices.Equal(got, s.wantIP) {
			t.Errorf("%s: ip route show proto 78:\n got %q\nwant %q", s.name, got, s.wantIP)
		}
	}
	if got, _ := r.Routes(); len(got) != 1 || got[0].String() != "198.18.3.0/24 via 198.18.100.3" {
		t.Errorf("Routes() = %v", got)
	}
	if got := ipRouteList(t, ns, "proto", "static"); !slices.Equal(got, []string{"198.18.9.0/24 via 198.18.100.9"}) {
		t.Errorf("the foreign route changed: %q", got)
	}

	if n, err := r.Uninstall(); n != 1 || err != nil {
		t.Errorf("Uninstall() = %d, %v; want 1 route", n, err)
	}
	if got := ipRoutes(t, ns); len(got) != 0 {
		t.Errorf("after Remove: %q", got)
	}
	if got := ipRouteList(t, ns, "proto", "static"); len(got) != 1 {
		t.Errorf("Remove took the foreign route: %q", got)
	}
}
