package hostport

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPod_binds(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.1.5"), netip.MustParseAddr("fd00:198:18:1::5")
	ip := netip.MustParseAddr
	for _, tc := range []struct {
		name    string
		addrs   []netip.Addr
		m       []Mapping
		want    []string // describe() of each bind
		wantErr string
	}{
		{"empty host IP, dual-stack: both families", []netip.Addr{v4, v6},
			[]Mapping{{Protocol: TCP, HostPort: 80, ContainerPort: 8080}},
			[]string{"tcp *:80 -> 198.18.1.5:8080", "tcp [*]:80 -> [fd00:198:18:1::5]:8080"}, ""},
		{"empty host IP, IPv6 only", []netip.Addr{v6},
			[]Mapping{{Protocol: UDP, HostPort: 53, ContainerPort: 53}},
			[]string{"udp [*]:53 -> [fd00:198:18:1::5]:53"}, ""},
		{"0.0.0.0 is every IPv4 address only", []netip.Addr{v4, v6},
			[]Mapping{{Protocol: TCP, HostPort: 80, ContainerPort: 80, HostIP: ip("0.0.0.0")}},
			[]string{"tcp *:80 -> 198.18.1.5:80"}, ""},
		{":: is every IPv6 address only", []netip.Addr{v4, v6},
			[]Mapping{{Protocol: SCTP, HostPort: 80, ContainerPort: 80, HostIP: ip("::")}},
			[]string{"sctp [*]:80 -> [fd00:198:18:1::5]:80"}, ""},
		{"a specific host IP: its family", []netip.Addr{v4, v6},
			[]Mapping{{Protocol: TCP, HostPort: 54323, ContainerPort: 8080, HostIP: ip("127.0.0.1")}},
			[]string{"tcp 127.0.0.1:54323 -> 198.18.1.5:8080"}, ""},
		{"an IPv4-mapped host IP is IPv4", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, HostPort: 1, ContainerPort: 1, HostIP: ip("::ffff:198.19.0.1")}},
			[]string{"tcp 198.19.0.1:1 -> 198.18.1.5:1"}, ""},
		{"no host port: declared only", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, ContainerPort: 80}}, nil, ""},
		{"same port, two protocols", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, HostPort: 53, ContainerPort: 53}, {Protocol: UDP, HostPort: 53, ContainerPort: 53}},
			[]string{"tcp *:53 -> 198.18.1.5:53", "udp *:53 -> 198.18.1.5:53"}, ""},
		{"the pod's own overlap", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, HostPort: 53, ContainerPort: 53}, {Protocol: TCP, HostPort: 53, ContainerPort: 54, HostIP: ip("198.19.0.1")}},
			nil, "overlaps the pod's own mapping tcp *:53 -> 53"},
		{"host IP of a family the pod lacks", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, HostPort: 80, ContainerPort: 80, HostIP: ip("fd00:198:18::1")}},
			nil, "host IP fd00:198:18::1 is IPv6 and the pod has no IPv6 address"},
		{"unknown protocol", []netip.Addr{v4},
			[]Mapping{{Protocol: 1, HostPort: 80, ContainerPort: 80}}, nil, "protocol 1 is none of tcp, udp, sctp"},
		{"container port 0", []netip.Addr{v4},
			[]Mapping{{Protocol: TCP, HostPort: 80}}, nil, "container port 0"},
		{"no address", nil,
			[]Mapping{{Protocol: TCP, HostPort: 80, ContainerPort: 80}}, nil, "the pod has no address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pod{PodRef: PodRef{ID: "id", Namespace: "ns", Name: "pod"}, Addrs: tc.addrs, Mappings: tc.m}
			binds, err := p.binds()
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidMapping) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "ns/pod") {
					t.Fatalf("error %v; want ErrInvalidMapping naming ns/pod and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range binds {
				got = append(got, b.describe())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("binds %q, want %q", got, tc.want)
			}
		})
	}
}

// Which mappings of two pods collide: same protocol, port and family,
// and the same host IP or an empty one.
func TestConflict(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.1.5"), netip.MustParseAddr("fd00:198:18:1::5")
	both, only4 := []netip.Addr{v4, v6}, []netip.Addr{v4}
	ip := netip.MustParseAddr
	tcp := func(hostIP string) Mapping {
		m := Mapping{Protocol: TCP, HostPort: 54323, ContainerPort: 8080}
		if hostIP != "" {
			m.HostIP = ip(hostIP)
		}
		return m
	}
	for _, tc := range []struct {
		name         string
		aAddrs, bAdr []netip.Addr
		a, b         Mapping
		conflict     bool
	}{
		{"the conformance pods: 127.0.0.1 and the node IP", only4, only4, tcp("127.0.0.1"), tcp("198.19.0.1"), false},
		{"the conformance pods: TCP and UDP on the node IP", only4, only4, tcp("198.19.0.1"),
			Mapping{Protocol: UDP, HostPort: 54323, ContainerPort: 8080, HostIP: ip("198.19.0.1")}, false},
		{"same host IP", only4, only4, tcp("198.19.0.1"), tcp("198.19.0.1"), true},
		{"empty overlaps every IP of its family", only4, only4, tcp(""), tcp("127.0.0.1"), true},
		{"empty of an IPv4 pod and an IPv6 host IP", only4, both, tcp(""), tcp("fd00:198:18::1"), false},
		{"empty of a dual-stack pod and an IPv6 host IP", both, both, tcp(""), tcp("fd00:198:18::1"), true},
		{"0.0.0.0 and empty", both, both, tcp("0.0.0.0"), tcp(""), true},
		{"0.0.0.0 and ::", both, both, tcp("0.0.0.0"), tcp("::"), false},
		{"another port", only4, only4, tcp(""), Mapping{Protocol: TCP, HostPort: 54324, ContainerPort: 8080}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Pod{PodRef: PodRef{ID: "a", Namespace: "ns", Name: "a"}, Addrs: tc.aAddrs, Mappings: []Mapping{tc.a}}
			b := Pod{PodRef: PodRef{ID: "b", Namespace: "ns", Name: "b"}, Addrs: tc.bAdr, Mappings: []Mapping{tc.b}}
			ab, err := a.binds()
			if err != nil {
				t.Fatal(err)
			}
			bb, err := b.binds()
			if err != nil {
				t.Fatal(err)
			}
			err = conflict(map[string]podEntry{"a": {ref: a.PodRef, binds: ab}}, b.PodRef, bb)
			if got := err != nil; got != tc.conflict {
				t.Errorf("conflict = %v (%v), want %v", got, err, tc.conflict)
			}
			var ce *ConflictError
			if err != nil && (!errors.As(err, &ce) || ce.Holder.ID != "a" || ce.Pod.ID != "b") {
				t.Errorf("error %v is not a ConflictError of b against a", err)
			}
		})
	}
}

func TestParseHostIP(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{{"", "invalid IP", false}, {"127.0.0.1", "127.0.0.1", false}, {"fd00::1", "fd00::1", false}, {"::ffff:1.2.3.4", "1.2.3.4", false}, {"localhost", "", true}} {
		a, err := ParseHostIP(tc.in)
		if (err != nil) != tc.err || (err == nil && a.String() != tc.want) {
			t.Errorf("ParseHostIP(%q) = %v, %v; want %s (error %v)", tc.in, a, err, tc.want, tc.err)
		}
		if err != nil && (!errors.Is(err, ErrInvalidMapping) || !strings.Contains(err.Error(), `"localhost"`)) {
			t.Errorf("ParseHostIP(%q) error %v does not quote the input", tc.in, err)
		}
	}
}
