package masq

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name           string
		pods, cluster  []netip.Prefix
		want           []string
		wantInvalidErr bool
	}{
		{
			name:    "dual-stack",
			pods:    prefixes("198.18.1.0/24", "fd00:198:18:1::/64"),
			cluster: prefixes("198.18.0.0/16", "fd00:198:18::/60"),
			want: []string{
				"nrinet-podnet: to cluster CIDR 198.18.0.0/16: not masqueraded",
				"nrinet-podnet: to cluster CIDR fd00:198:18::/60: not masqueraded",
				"nrinet-podnet: from pod CIDR 198.18.1.0/24 to outside the cluster: masquerade",
				"nrinet-podnet: from pod CIDR fd00:198:18:1::/64 to outside the cluster: masquerade",
			},
		},
		{
			name:    "a family without a cluster CIDR is left alone",
			pods:    prefixes("198.18.1.0/24", "fd00:198:18:1::/64"),
			cluster: prefixes("198.18.0.0/16"),
			want: []string{
				"nrinet-podnet: to cluster CIDR 198.18.0.0/16: not masqueraded",
				"nrinet-podnet: from pod CIDR 198.18.1.0/24 to outside the cluster: masquerade",
			},
		},
		{
			name:    "a pod CIDR outside the cluster CIDRs is still not masqueraded to",
			pods:    prefixes("198.19.1.0/24"),
			cluster: prefixes("198.18.0.0/16", "198.18.4.0/24", "198.18.0.0/16"),
			want: []string{
				"nrinet-podnet: to cluster CIDR 198.18.0.0/16: not masqueraded",
				"nrinet-podnet: to pod CIDR 198.19.1.0/24: not masqueraded",
				"nrinet-podnet: from pod CIDR 198.19.1.0/24 to outside the cluster: masquerade",
			},
		},
		{
			name:    "no cluster CIDR: no rule",
			pods:    prefixes("198.18.1.0/24"),
			cluster: nil,
			want:    []string{},
		},
		{
			name:           "host bits set",
			pods:           prefixes("198.18.1.1/24"),
			cluster:        prefixes("198.18.0.0/16"),
			wantInvalidErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := plan(tc.pods, tc.cluster)
			if tc.wantInvalidErr {
				if !errors.Is(err, ErrInvalidCIDR) {
					t.Fatalf("plan: err = %v, want ErrInvalidCIDR", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, r := range rules {
				got = append(got, r.comment)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rules:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []netip.Prefix
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " 198.18.0.0/15 , fd00:198:18::/48,", want: prefixes("198.18.0.0/15", "fd00:198:18::/48")},
		{in: "198.18.0.1/15", wantErr: true},
		{in: "198.18.0.0", wantErr: true},
		{in: "::ffff:198.18.0.0/112", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCIDRs(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidCIDR) {
					t.Fatalf("err = %v, want ErrInvalidCIDR", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseCIDRs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
