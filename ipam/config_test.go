package ipam_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/ipam"
)

func TestConfig_Validate(t *testing.T) {
	addrs := func(ss ...string) []netip.Addr {
		out := make([]netip.Addr, len(ss))
		for i, s := range ss {
			out[i] = netip.MustParseAddr(s)
		}
		return out
	}
	tests := []struct {
		name string
		cfg  ipam.Config
		want string // substring of the error; "" means valid
	}{
		{"ipv4", cfg("198.18.0.0/24"), ""},
		{"dual-stack", cfg("198.18.0.0/24", "2001:db8::/64"), ""},
		{"smallest", cfg("198.18.0.0/30", "2001:db8::/126"), ""},
		{"gateways", ipam.Config{Subnets: prefixes("198.18.0.0/24", "2001:db8::/64"), Gateways: addrs("2001:db8::fe", "198.18.0.254")}, ""},
		{"exclude single", ipam.Config{Subnets: prefixes("198.18.0.0/24"), Exclude: prefixes("198.18.0.9/32", "10.0.0.0/8")}, ""},
		{"empty", ipam.Config{}, "ipam: invalid config: no subnets"},
		{"overlap", cfg("198.18.0.0/24", "198.18.0.128/25"), "ipam: invalid config: subnets 198.18.0.0/24 and 198.18.0.128/25 overlap"},
		{"overlap v6", cfg("2001:db8::/64", "2001:db8::/48"), "subnets 2001:db8::/64 and 2001:db8::/48 overlap"},
		{"not masked", cfg("198.18.0.1/24"), "subnet 198.18.0.1/24 is not masked (want 198.18.0.0/24)"},
		{"too small v4", cfg("198.18.0.0/31"), "subnet 198.18.0.0/31 is too small (IPv4 prefix must be /30 or shorter)"},
		{"too small v6", cfg("2001:db8::/127"), "subnet 2001:db8::/127 is too small (IPv6 prefix must be /126 or shorter)"},
		{"4in6", cfg("::ffff:198.18.0.0/120"), "subnet ::ffff:198.18.0.0/120 is an IPv4-mapped IPv6 prefix"},
		{"zero subnet", ipam.Config{Subnets: []netip.Prefix{{}}}, "subnets[0] is not a valid prefix"},
		{"gateway outside", ipam.Config{Subnets: prefixes("198.18.0.0/24", "2001:db8::/64"), Gateways: addrs("198.18.1.1")},
			"gateway 198.18.1.1 is outside every subnet (198.18.0.0/24, 2001:db8::/64)"},
		{"gateway network", ipam.Config{Subnets: prefixes("198.18.0.0/24"), Gateways: addrs("198.18.0.0")}, "gateway 198.18.0.0 is the network address of 198.18.0.0/24"},
		{"gateway broadcast", ipam.Config{Subnets: prefixes("198.18.0.0/24"), Gateways: addrs("198.18.0.255")}, "gateway 198.18.0.255 is the broadcast address of 198.18.0.0/24"},
		{"two gateways", ipam.Config{Subnets: prefixes("198.18.0.0/24"), Gateways: addrs("198.18.0.1", "198.18.0.2")}, "gateways 198.18.0.1 and 198.18.0.2 are both in subnet 198.18.0.0/24"},
		{"gateway zone", ipam.Config{Subnets: prefixes("2001:db8::/64"), Gateways: addrs("fe80::1%eth0")}, "gateway fe80::1%eth0 has a zone"},
		{"exclude not masked", ipam.Config{Subnets: prefixes("198.18.0.0/24"), Exclude: prefixes("198.18.0.5/24")}, "exclude 198.18.0.5/24 is not masked (want 198.18.0.0/24 or 198.18.0.5/32)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.want)
			}
			if !errors.Is(err, ipam.ErrInvalidConfig) {
				t.Errorf("Validate() = %v, does not match ErrInvalidConfig", err)
			}
		})
	}
}

func TestConfig_Validate_reportsAll(t *testing.T) {
	err := cfg("198.18.0.1/24", "2001:db8::/127").Validate()
	for _, want := range []string{"198.18.0.1/24 is not masked", "2001:db8::/127 is too small"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name                       string
		subnets, exclude, gateways []string
		want                       ipam.Config
		wantErr                    string
	}{
		{
			name:    "dual-stack",
			subnets: []string{"198.18.0.0/24", " 2001:db8::/64 "},
			exclude: []string{"198.18.0.128/25", "198.18.0.7", "2001:db8::10"},
			want: ipam.Config{
				Subnets: prefixes("198.18.0.0/24", "2001:db8::/64"),
				Exclude: prefixes("198.18.0.128/25", "198.18.0.7/32", "2001:db8::10/128"),
			},
		},
		{
			name:     "gateway",
			subnets:  []string{"198.18.0.0/24"},
			gateways: []string{"198.18.0.254"},
			want:     ipam.Config{Subnets: prefixes("198.18.0.0/24"), Gateways: []netip.Addr{netip.MustParseAddr("198.18.0.254")}},
		},
		{name: "bad subnet", subnets: []string{"198.18.0.0/33"}, wantErr: `subnets[0] "198.18.0.0/33": prefix length out of range`},
		{name: "subnet without length", subnets: []string{"198.18.0.0"}, wantErr: `subnets[0] "198.18.0.0": no '/'`},
		{name: "bad exclude", subnets: []string{"198.18.0.0/24"}, exclude: []string{"198.18.0.x"}, wantErr: `exclude[0] "198.18.0.x"`},
		{name: "bad gateway", subnets: []string{"198.18.0.0/24"}, gateways: []string{"198.18.0.1/24"}, wantErr: `gateways[0] "198.18.0.1/24"`},
		{name: "not masked", subnets: []string{"198.18.0.1/24"}, wantErr: "subnet 198.18.0.1/24 is not masked"},
		{name: "empty", wantErr: "no subnets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ipam.ParseConfig(tc.subnets, tc.exclude, tc.gateways)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ipam.ErrInvalidConfig) {
					t.Fatalf("ParseConfig() error = %v, want ErrInvalidConfig containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig(): %v", err)
			}
			if !equalPrefixes(got.Subnets, tc.want.Subnets) || !equalPrefixes(got.Exclude, tc.want.Exclude) ||
				len(got.Gateways) != len(tc.want.Gateways) || (len(got.Gateways) > 0 && got.Gateways[0] != tc.want.Gateways[0]) {
				t.Fatalf("ParseConfig() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseConfig checks that ParseConfig never panics, that every error
// matches ErrInvalidConfig, and that what it accepts validates and opens.
func FuzzParseConfig(f *testing.F) {
	f.Add("198.18.0.0/24", "198.18.0.7", "198.18.0.1")
	f.Add("2001:db8::/64", "2001:db8::/120", "")
	f.Add("198.18.0.1/24", "", "10.0.0.1")
	f.Add("198.18.0.0/24,198.18.0.128/25", "x", "::1%eth0")
	f.Fuzz(func(t *testing.T, subnets, exclude, gateways string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		c, err := ipam.ParseConfig(split(subnets), split(exclude), split(gateways))
		if err != nil {
			if !errors.Is(err, ipam.ErrInvalidConfig) {
				t.Fatalf("ParseConfig error %v does not match ErrInvalidConfig", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted a config that fails Validate: %v", err)
		}
	})
}
