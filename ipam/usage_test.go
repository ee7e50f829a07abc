package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"testing"

	"github.com/nrinet/nrinet/ipam"
)

func TestAllocator_Usage(t *testing.T) {
	withExclude := func(c ipam.Config, ex ...string) ipam.Config {
		c.Exclude = prefixes(ex...)
		return c
	}
	withGateway := func(c ipam.Config, gw string) ipam.Config {
		c.Gateways = []netip.Addr{netip.MustParseAddr(gw)}
		return c
	}
	for _, tc := range []struct {
		name   string
		cfg    ipam.Config
		owners int
		want   []ipam.Usage
	}{
		{"empty /28", cfg("198.18.0.0/28"), 0,
			// 16 - network - broadcast - gateway
			[]ipam.Usage{{Subnet: prefixes("198.18.0.0/28")[0], InUse: 0, Free: 13}}},
		{"/28 with three owners", cfg("198.18.0.0/28"), 3,
			[]ipam.Usage{{Subnet: prefixes("198.18.0.0/28")[0], InUse: 3, Free: 10}}},
		{"exclusions, overlapping each other and the gateway", withExclude(cfg("198.18.0.0/28"), "198.18.0.0/30", "198.18.0.2/31", "198.18.0.12/30", "198.18.1.0/24"), 2,
			// pool .1-.14; reserved .1-.3 and .12-.14
			[]ipam.Usage{{Subnet: prefixes("198.18.0.0/28")[0], InUse: 2, Free: 6}}},
		{"gateway inside an exclusion", withGateway(withExclude(cfg("198.18.0.0/28"), "198.18.0.8/29"), "198.18.0.9"), 0,
			// pool .1-.14, reserved .8-.14
			[]ipam.Usage{{Subnet: prefixes("198.18.0.0/28")[0], InUse: 0, Free: 7}}},
		{"full /30", cfg("198.18.0.0/30"), 1,
			[]ipam.Usage{{Subnet: prefixes("198.18.0.0/30")[0], InUse: 1, Free: 0}}},
		{"dual-stack, IPv6 /64", cfg("198.18.0.0/24", "fd00:198:18::/64"), 2, []ipam.Usage{
			{Subnet: prefixes("198.18.0.0/24")[0], InUse: 2, Free: 251},
			// 2^64 - the subnet-router anycast address - gateway - 2
			{Subnet: prefixes("fd00:198:18::/64")[0], InUse: 2, Free: math.MaxUint64 - 3},
		}},
		{"IPv6 /48 saturates", cfg("fd00:198:18::/48"), 1,
			[]ipam.Usage{{Subnet: prefixes("fd00:198:18::/48")[0], InUse: 1, Free: math.MaxUint64}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, tc.cfg)
			for i := range tc.owners {
				s.mustAllocate(t, fmt.Sprint("pod-", i))
			}
			got, err := s.Usage()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Usage() = %v, want %v", got, tc.want)
			}
			// Where it can be counted, Free is what Allocate still gets.
			if len(got) == 1 && got[0].Free < 1000 {
				n := uint64(0)
				for ; ; n++ {
					if _, err := s.Allocate(context.Background(), fmt.Sprint("fill-", n)); err != nil {
						if !isExhausted(err) {
							t.Fatal(err)
						}
						break
					}
				}
				if n != got[0].Free {
					t.Errorf("Allocate succeeded %d more times, Usage said %d free", n, got[0].Free)
				}
			}
		})
	}
}

// TestAllocator_Usage_staleOverlap: addresses still held in a subnet that
// is no longer configured take from the free addresses of the new subnet
// that overlaps it, not from its addresses in use; released, they are
// free again.
func TestAllocator_Usage_staleOverlap(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/28"))
	s.mustAllocate(t, "old-a")
	s.mustAllocate(t, "old-b")
	s = s.reopen(t, cfg("198.18.0.0/27"))
	s.mustAllocate(t, "new")
	want := func(inUse, free uint64) {
		t.Helper()
		got, err := s.Usage()
		if err != nil {
			t.Fatal(err)
		}
		if w := []ipam.Usage{{Subnet: prefixes("198.18.0.0/27")[0], InUse: inUse, Free: free}}; fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("Usage() = %v, want %v", got, w)
		}
	}
	want(1, 29-3) // 32 - network - broadcast - gateway = 29
	s.mustRelease(t, "old-a")
	want(1, 29-2)
	for i := range 29 - 2 {
		s.mustAllocate(t, fmt.Sprint("fill-", i))
	}
	want(28, 0)
}

func TestAllocator_Usage_closed(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/24"))
	s.Close()
	if _, err := s.Usage(); !errors.Is(err, ipam.ErrClosed) {
		t.Errorf("Usage after Close = %v, want ErrClosed", err)
	}
}

// BenchmarkUsage is the cost of one metrics scrape's read of the
// allocator with many pods.
func BenchmarkUsage(b *testing.B) {
	for _, owners := range []int{100, 10000} {
		b.Run(fmt.Sprint(owners, "-owners"), func(b *testing.B) {
			a, err := ipam.Open(b.TempDir()+"/ipam.db", cfg("198.18.0.0/16", "fd00:198:18::/64"), ipam.WithNoSync())
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			for i := range owners {
				if _, err := a.Allocate(context.Background(), fmt.Sprint("pod-", i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Usage(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
