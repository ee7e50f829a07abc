package kube

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeObj builds a Node; addrs are "InternalIP=…" or "ExternalIP=…".
func nodeObj(name string, podCIDRs []string, addrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.PodCIDRs = podCIDRs
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	for _, a := range addrs {
		typ, addr, _ := strings.Cut(a, "=")
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(typ), Address: addr})
	}
	return n
}

func TestNodeFromObject(t *testing.T) {
	pfx := netip.MustParsePrefix
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		want    Node
		wantErr string
	}{
		{
			name: "dual-stack, IPv6 listed first",
			node: nodeObj("a", []string{"fd00:198:18:1::/64", "198.18.1.0/24"},
				"ExternalIP=198.19.0.1", "InternalIP=fd00:198:18:100::1", "InternalIP=198.18.100.1", "InternalIP=198.18.100.9"),
			want: Node{Name: "a", PodCIDRs: []netip.Prefix{pfx("198.18.1.0/24"), pfx("fd00:198:18:1::/64")},
				InternalIPs: []netip.Addr{addr("198.18.100.1"), addr("fd00:198:18:100::1")}},
		},
		{
			name: "only spec.podCIDR",
			node: func() *corev1.Node {
				n := nodeObj("b", nil, "InternalIP=198.18.100.2")
				n.Spec.PodCIDR = "198.18.2.0/24"
				return n
			}(),
			want: Node{Name: "b", PodCIDRs: []netip.Prefix{pfx("198.18.2.0/24")}, InternalIPs: []netip.Addr{addr("198.18.100.2")}},
		},
		{name: "no pod CIDR yet", node: nodeObj("c", nil), want: Node{Name: "c"}},
		{name: "not a prefix", node: nodeObj("d", []string{"198.18.1.0"}), wantErr: `Node d: pod CIDR "198.18.1.0"`},
		{name: "host bits", node: nodeObj("e", []string{"198.18.1.1/24"}), wantErr: "Node e: pod CIDR 198.18.1.1/24 is not a network prefix"},
		{name: "two IPv4", node: nodeObj("f", []string{"198.18.1.0/24", "198.18.2.0/24"}), wantErr: "Node f: two pod CIDRs of one family"},
		{name: "bad InternalIP", node: nodeObj("g", []string{"198.18.1.0/24"}, "InternalIP=node-g"), wantErr: `Node g: InternalIP "node-g"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeFromObject(tc.node)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidNode) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidNode with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("NodeFromObject (-want +got):\n%s", d)
			}
		})
	}
}

func TestRoutesFor(t *testing.T) {
	pfx := netip.MustParsePrefix
	node := func(name string, cidrs []string, ips ...string) Node {
		n := Node{Name: name}
		for _, c := range cidrs {
			n.PodCIDRs = append(n.PodCIDRs, pfx(c))
		}
		for _, ip := range ips {
			n.InternalIPs = append(n.InternalIPs, netip.MustParseAddr(ip))
		}
		return n
	}
	own := []netip.Prefix{pfx("198.18.1.0/24"), pfx("fd00:198:18:1::/64")}
	for _, tc := range []struct {
		name        string
		nodes       []Node
		want        []string
		wantSkipped []string
	}{
		{
			name: "dual-stack peers, self left out",
			nodes: []Node{
				node("self", []string{"198.18.1.0/24"}, "198.18.100.1"),
				node("c", []string{"198.18.3.0/24", "fd00:198:18:3::/64"}, "198.18.100.3", "fd00:198:18:100::3"),
				node("b", []string{"198.18.2.0/24", "fd00:198:18:2::/64"}, "198.18.100.2", "fd00:198:18:100::2"),
			},
			want: []string{
				"198.18.2.0/24 via 198.18.100.2 (Node b)",
				"198.18.3.0/24 via 198.18.100.3 (Node c)",
				"fd00:198:18:2::/64 via fd00:198:18:100::2 (Node b)",
				"fd00:198:18:3::/64 via fd00:198:18:100::3 (Node c)",
			},
		},
		{
			name:        "no InternalIP of the family",
			nodes:       []Node{node("b", []string{"198.18.2.0/24", "fd00:198:18:2::/64"}, "198.18.100.2")},
			want:        []string{"198.18.2.0/24 via 198.18.100.2 (Node b)"},
			wantSkipped: []string{"Node b: pod CIDR fd00:198:18:2::/64: no InternalIP of its family in [198.18.100.2]"},
		},
		{
			name: "overlaps",
			nodes: []Node{
				node("b", []string{"198.18.1.128/25"}, "198.18.100.2"),
				node("c", []string{"198.18.4.0/24"}, "198.18.100.3"),
				node("d", []string{"198.18.4.0/23"}, "198.18.100.4"),
			},
			want: []string{"198.18.4.0/24 via 198.18.100.3 (Node c)"},
			wantSkipped: []string{
				"Node b: pod CIDR 198.18.1.128/25 overlaps this node's pod CIDR 198.18.1.0/24",
				"Node d: pod CIDR 198.18.4.0/23 overlaps the pod CIDR of Node c 198.18.4.0/24",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes, skipped := RoutesFor("self", own, tc.nodes)
			var got []string
			for _, r := range routes {
				got = append(got, r.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("routes:\n got %q\nwant %q", got, tc.want)
			}
			if !slices.Equal(skipped, tc.wantSkipped) {
				t.Errorf("skipped:\n got %q\nwant %q", skipped, tc.wantSkipped)
			}
		})
	}
}

func TestSlimNode(t *testing.T) {
	n := nodeObj("a", []string{"198.18.1.0/24"}, "InternalIP=198.18.100.1")
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/big:1"}}}
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n.Labels = map[string]string{"k": "v"}
	got, err := slimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*corev1.Node)
	if len(s.Status.Images) != 0 || len(s.ManagedFields) != 0 || len(s.Labels) != 0 {
		t.Errorf("slimNode kept more than it reads: %+v", s)
	}
	a, _ := NodeFromObject(n)
	b, _ := NodeFromObject(s)
	if !slices.Equal(a.PodCIDRs, b.PodCIDRs) || !slices.Equal(a.InternalIPs, b.InternalIPs) || a.Name != b.Name {
		t.Errorf("slimNode lost what NodeFromObject reads: %+v vs %+v", a, b)
	}
	if x, _ := slimNode("not a node"); x != "not a node" {
		t.Errorf("slimNode changed a non-Node: %v", x)
	}
}

func TestPrefixIndex(t *testing.T) {
	var x prefixIndex
	for _, p := range []string{"10.0.0.0/24", "10.0.2.0/27", "10.1.0.0/16", "fd00:1::/64", "fd00:2::/56"} {
		x.add(netip.MustParsePrefix(p), "held "+p)
	}
	for _, tc := range []struct {
		p, want string // want: the held prefix it overlaps, "" for none
	}{
		{"10.0.0.0/24", "10.0.0.0/24"},      // the same
		{"10.0.0.128/25", "10.0.0.0/24"},    // inside a held one
		{"10.0.0.0/16", "10.0.0.0/24"},      // holds held ones
		{"10.0.2.32/27", ""},                // next to a held one
		{"10.0.1.0/24", ""},                 // between held ones
		{"10.1.200.0/24", "10.1.0.0/16"},    // deep inside
		{"0.0.0.0/0", "10.0.0.0/24"},        // everything of its family
		{"fd00:1::/64", "fd00:1::/64"},      //
		{"fd00:2:0:ff::/64", "fd00:2::/56"}, //
		{"fd00:3::/64", ""},                 //
		{"::/0", "fd00:1::/64"},             // IPv4 ones are not IPv6
		{"10.0.2.16/28", "10.0.2.0/27"},     //
		{"9.255.255.255/32", ""},            //
		{"10.255.255.255/32", ""},           //
		{"fd00:2:0:100::/64", ""},           // just past the /56
		{"fd00:1:0:0:8000::/65", "fd00:1::/64"},
	} {
		q, whose, ok := x.overlapping(netip.MustParsePrefix(tc.p))
		got := ""
		if ok {
			got = q.String()
			if whose != "held "+got {
				t.Errorf("%s: whose %q, want %q", tc.p, whose, "held "+got)
			}
		}
		if got != tc.want {
			t.Errorf("%s overlaps %q, want %q", tc.p, got, tc.want)
		}
	}
}
