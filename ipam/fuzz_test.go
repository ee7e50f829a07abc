package ipam_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
)

// FuzzAllocateRelease reads a sequence of operations from the input and
// runs them against a small dual-stack store, comparing with a model. Each
// byte is one operation on one of 16 owners: the high bit chooses release
// or allocate. The store has 4 IPv4 addresses (a /29 minus gateway and an
// excluded address) and 6 IPv6 ones, so it runs full often.
func FuzzAllocateRelease(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 0x80, 5, 0x81, 6, 7})
	f.Add([]byte{0, 0, 0x80, 0x80, 1})
	f.Add([]byte{0, 1, 2, 3, 0x83, 0x82, 0x81, 0x80, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		c := cfg("198.18.0.0/29", "2001:db8::/125")
		c.Exclude = prefixes("198.18.0.4/32")
		s := mustOpen(t, c)
		ctx := context.Background()
		model := map[string][]netip.Prefix{}
		for i, op := range ops {
			owner := fmt.Sprint("pod-", op&0x0f)
			if op&0x80 != 0 {
				s.mustRelease(t, owner)
				delete(model, owner)
				continue
			}
			got, err := s.Allocate(ctx, owner)
			if want, ok := model[owner]; ok {
				if err != nil || !equalPrefixes(got, want) {
					t.Fatalf("op %d: repeated Allocate(%q) = %v, %v; want %v", i, owner, got, err, want)
				}
				continue
			}
			switch {
			case isExhausted(err):
				if len(model) < 4 {
					t.Fatalf("op %d: exhausted with only %d owners", i, len(model))
				}
			case err != nil:
				t.Fatalf("op %d: Allocate(%q): %v", i, owner, err)
			case len(model) >= 4:
				t.Fatalf("op %d: Allocate(%q) = %v with the IPv4 subnet full", i, owner, got)
			default:
				for j, p := range got {
					a := p.Addr()
					if p.Masked() != c.Subnets[j] || a == c.Subnets[j].Addr() || a == s.Gateways()[j].Addr() ||
						a == netip.MustParseAddr("198.18.0.4") || a == netip.MustParseAddr("198.18.0.7") {
						t.Fatalf("op %d: Allocate(%q) handed out reserved address %s", i, owner, p)
					}
				}
				model[owner] = got
			}
		}
		if err := s.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
		s.mustNoDuplicates(t)
		owners, err := s.Owners()
		if err != nil || len(owners) != len(model) {
			t.Fatalf("Owners() = %v, %v; model has %d", owners, err, len(model))
		}
		for o, want := range model {
			if got, ok, err := s.Lookup(o); err != nil || !ok || !equalPrefixes(got, want) {
				t.Fatalf("Lookup(%q) = %v, %v, %v; want %v", o, got, ok, err, want)
			}
		}
	})
}
