package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/ipam"
)

// step is one operation of a scripted allocator test.
type step struct {
	release bool
	owner   string
	want    []string // addresses Allocate returns
	wantErr string   // substring of the Allocate error
}

func alloc(owner string, want ...string) step { return step{owner: owner, want: want} }
func release(owner string) step               { return step{release: true, owner: owner} }
func allocErr(owner, err string) step         { return step{owner: owner, wantErr: err} }

func TestAllocator_Allocate(t *testing.T) {
	withGW := cfg("198.18.0.0/29")
	withGW.Gateways = []netip.Addr{netip.MustParseAddr("198.18.0.6")}
	excl := cfg("198.18.0.0/28", "2001:db8::/120")
	excl.Exclude = prefixes("198.18.0.2/31", "198.18.0.5/32", "2001:db8::/126", "10.0.0.0/8")
	tests := []struct {
		name  string
		cfg   ipam.Config
		steps []step
	}{
		{"allocate release reallocate", cfg("198.18.0.0/24"), []step{
			alloc("a", "198.18.0.2/24"),
			alloc("b", "198.18.0.3/24"),
			release("a"),
			alloc("a", "198.18.0.4/24"),
			release("a"),
			release("a"), // idempotent
			release("never-allocated"),
		}},
		{"idempotent", cfg("198.18.0.0/24"), []step{
			alloc("a", "198.18.0.2/24"),
			alloc("a", "198.18.0.2/24"),
			alloc("b", "198.18.0.3/24"),
			alloc("a", "198.18.0.2/24"),
		}},
		{"dual-stack", cfg("198.18.0.0/24", "2001:db8::/64"), []step{
			alloc("a", "198.18.0.2/24", "2001:db8::2/64"),
			alloc("b", "198.18.0.3/24", "2001:db8::3/64"),
			alloc("a", "198.18.0.2/24", "2001:db8::2/64"),
		}},
		{"subnet order", cfg("2001:db8::/64", "198.18.0.0/24"), []step{
			alloc("a", "2001:db8::2/64", "198.18.0.2/24"),
		}},
		{"exhaust /30", cfg("198.18.0.0/30"), []step{
			alloc("a", "198.18.0.2/30"),
			allocErr("b", "ipam: no free address in 198.18.0.0/30"),
			release("a"),
			alloc("b", "198.18.0.2/30"),
		}},
		{"exhaust /126", cfg("2001:db8::/126"), []step{
			alloc("a", "2001:db8::2/126"),
			alloc("b", "2001:db8::3/126"),
			allocErr("c", "ipam: no free address in 2001:db8::/126"),
		}},
		{"dual-stack exhaustion stores nothing", cfg("2001:db8::/64", "198.18.0.0/30"), []step{
			alloc("a", "2001:db8::2/64", "198.18.0.2/30"),
			allocErr("b", "ipam: no free address in 198.18.0.0/30"),
			release("a"),
			// b took nothing from the IPv6 subnet above, so the cursor moved
			// only once.
			alloc("b", "2001:db8::3/64", "198.18.0.2/30"),
		}},
		{"excluded skipped", excl, []step{
			alloc("a", "198.18.0.4/28", "2001:db8::4/120"),
			alloc("b", "198.18.0.6/28", "2001:db8::5/120"),
		}},
		{"gateway reserved", withGW, []step{
			alloc("a", "198.18.0.1/29"),
			alloc("b", "198.18.0.2/29"),
			alloc("c", "198.18.0.3/29"),
			alloc("d", "198.18.0.4/29"),
			alloc("e", "198.18.0.5/29"),
			allocErr("f", "ipam: no free address in 198.18.0.0/29"),
		}},
		{"next fit", cfg("198.18.0.0/29"), []step{
			alloc("a", "198.18.0.2/29"),
			alloc("b", "198.18.0.3/29"),
			release("a"),
			alloc("c", "198.18.0.4/29"), // not .2, just released
			alloc("d", "198.18.0.5/29"),
			alloc("e", "198.18.0.6/29"),
			alloc("f", "198.18.0.2/29"), // wrapped around
			release("d"),
			alloc("g", "198.18.0.5/29"),
			allocErr("h", "no free address in 198.18.0.0/29"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, tc.cfg)
			ctx := context.Background()
			for i, st := range tc.steps {
				if st.release {
					s.mustRelease(t, st.owner)
					if _, ok, err := s.Lookup(st.owner); ok || err != nil {
						t.Fatalf("step %d: Lookup(%q) after Release = %v, %v", i, st.owner, ok, err)
					}
					continue
				}
				got, err := s.Allocate(ctx, st.owner)
				if st.wantErr != "" {
					if err == nil || err.Error() != st.wantErr && !strings.HasSuffix(err.Error(), st.wantErr) {
						t.Fatalf("step %d: Allocate(%q) = %v, %v; want error %q", i, st.owner, got, err, st.wantErr)
					}
					if !isExhausted(err) {
						t.Errorf("step %d: error %v does not match ErrExhausted", i, err)
					}
					if _, ok, _ := s.Lookup(st.owner); ok {
						t.Fatalf("step %d: failed Allocate(%q) stored a record", i, st.owner)
					}
					continue
				}
				if err != nil || !equalPrefixes(got, prefixes(st.want...)) {
					t.Fatalf("step %d: Allocate(%q) = %v, %v; want %v", i, st.owner, got, err, st.want)
				}
				if rec, ok, err := s.Lookup(st.owner); !ok || err != nil || !equalPrefixes(rec, got) {
					t.Fatalf("step %d: Lookup(%q) = %v, %v, %v; want %v", i, st.owner, rec, ok, err, got)
				}
			}
			s.mustNoDuplicates(t)
		})
	}
}

func TestAllocator_Allocate_exhaustedError(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/30"))
	s.mustAllocate(t, "a")
	_, err := s.Allocate(context.Background(), "b")
	var ex *ipam.ExhaustedError
	if !errors.As(err, &ex) || ex.Subnet != netip.MustParsePrefix("198.18.0.0/30") {
		t.Fatalf("Allocate error = %#v, want *ExhaustedError for 198.18.0.0/30", err)
	}
	if got, want := err.Error(), "ipam: no free address in 198.18.0.0/30"; got != want {
		t.Fatalf("error text = %q, want %q", got, want)
	}
}

func TestAllocator_Allocate_invalid(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/24"))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		owner string
		want  error
	}{
		{"empty owner", context.Background(), "", ipam.ErrInvalidOwner},
		{"huge owner", context.Background(), strings.Repeat("x", 40000), ipam.ErrInvalidOwner},
		{"canceled", canceled, "a", context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Allocate(tc.ctx, tc.owner); !errors.Is(err, tc.want) {
				t.Errorf("Allocate = %v, want %v", err, tc.want)
			}
			if err := s.Release(tc.ctx, tc.owner); !errors.Is(err, tc.want) {
				t.Errorf("Release = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestAllocator_Allocate_largeIPv6 shows that a search skips an excluded
// range in one step instead of walking a /65.
func TestAllocator_Allocate_largeIPv6(t *testing.T) {
	c := cfg("2001:db8::/64")
	c.Exclude = prefixes("2001:db8::/65")
	s := mustOpen(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 100 {
		got, err := s.Allocate(ctx, fmt.Sprint("pod-", i))
		if err != nil {
			t.Fatal(err)
		}
		want := netip.MustParsePrefix(fmt.Sprintf("2001:db8::8000:0:0:%x/64", i))
		if got[0] != want {
			t.Fatalf("Allocate #%d = %v, want %v", i, got[0], want)
		}
	}
}

func TestAllocator_persistence(t *testing.T) {
	c := cfg("198.18.0.0/24", "2001:db8::/64")
	s := mustOpen(t, c)
	a := s.mustAllocate(t, "a")
	s.mustAllocate(t, "b")
	s.mustRelease(t, "b")

	s = s.reopen(t, c)
	if got := s.mustAllocate(t, "a"); !equalPrefixes(got, a) {
		t.Fatalf("after reopen Allocate(a) = %v, want %v", got, a)
	}
	// The cursor survived too: b's old addresses are not reused.
	if got, want := s.mustAllocate(t, "c"), prefixes("198.18.0.4/24", "2001:db8::4/64"); !equalPrefixes(got, want) {
		t.Fatalf("after reopen Allocate(c) = %v, want %v", got, want)
	}
	if owners, err := s.Owners(); err != nil || strings.Join(owners, ",") != "a,c" {
		t.Fatalf("Owners() = %v, %v; want [a c]", owners, err)
	}
}

func TestAllocator_configChange(t *testing.T) {
	old := cfg("198.18.0.0/24")
	s := mustOpen(t, old)
	s.mustAllocate(t, "a") // 198.18.0.2/24
	s.mustAllocate(t, "b") // 198.18.0.3/24

	// The /24 grows to a /23 and IPv6 is added.
	s = s.reopen(t, cfg("198.18.0.0/23", "2001:db8::/64"))
	all, err := s.Allocations()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(all); got != "[a 198.18.0.2/24 (stale) b 198.18.0.3/24 (stale)]" {
		t.Fatalf("Allocations() = %s", got)
	}
	// a gets new addresses; the stale ones stay taken.
	got := s.mustAllocate(t, "a")
	if want := prefixes("198.18.0.4/23", "2001:db8::2/64"); !equalPrefixes(got, want) {
		t.Fatalf("Allocate(a) = %v, want %v", got, want)
	}
	s.mustRelease(t, "a")
	if rec, ok, _ := s.Lookup("a"); ok {
		t.Fatalf("Lookup(a) after Release = %v", rec)
	}
	// Still taken by b, so .3 is skipped even after wrapping.
	for i := range 508 {
		s.mustAllocate(t, fmt.Sprint("fill-", i))
	}
	if _, err := s.Allocate(context.Background(), "one-too-many"); !isExhausted(err) {
		t.Fatalf("Allocate past the end = %v, want ErrExhausted", err)
	}
	s.mustNoDuplicates(t)
}

func TestAllocator_Gateways(t *testing.T) {
	c := cfg("198.18.0.0/24", "2001:db8::/64")
	c.Gateways = []netip.Addr{netip.MustParseAddr("2001:db8::fe")}
	s := mustOpen(t, c)
	if got, want := s.Gateways(), prefixes("198.18.0.1/24", "2001:db8::fe/64"); !equalPrefixes(got, want) {
		t.Errorf("Gateways() = %v, want %v", got, want)
	}
	if got := s.Subnets(); !equalPrefixes(got, c.Subnets) {
		t.Errorf("Subnets() = %v, want %v", got, c.Subnets)
	}
	if got := s.mustAllocate(t, "a"); !equalPrefixes(got, prefixes("198.18.0.2/24", "2001:db8::1/64")) {
		t.Errorf("Allocate(a) = %v", got)
	}
}

func TestOpen_errors(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/24"))
	_, err := ipam.Open(s.path, s.cfg, ipam.WithTimeout(50*time.Millisecond))
	if !errors.Is(err, ipam.ErrLocked) || !strings.Contains(err.Error(), s.path) {
		t.Errorf("second Open = %v, want ErrLocked naming the path", err)
	}
	if _, err := ipam.Open(s.path+".x", ipam.Config{}); !errors.Is(err, ipam.ErrInvalidConfig) {
		t.Errorf("Open with empty config = %v, want ErrInvalidConfig", err)
	}
	if _, err := ipam.Open(t.TempDir()+"/missing/dir/ipam.db", s.cfg); err == nil {
		t.Errorf("Open in a missing directory succeeded")
	}
	for _, tc := range []struct {
		opt  ipam.Option
		want string
	}{
		{ipam.WithTimeout(0), "ipam: lock timeout 0s: want > 0"},
		{ipam.WithLogger(nil), "ipam: WithLogger: nil logger"},
	} {
		path := t.TempDir() + "/ipam.db"
		if _, err := ipam.Open(path, s.cfg, tc.opt); err == nil || err.Error() != tc.want {
			t.Errorf("Open with a bad option = %v, want %s", err, tc.want)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open with a bad option left %s: %v", path, err)
		}
	}
}

func TestAllocator_Close(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/24"))
	s.mustAllocate(t, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	ctx := context.Background()
	if _, err := s.Allocate(ctx, "b"); !errors.Is(err, ipam.ErrClosed) {
		t.Errorf("Allocate after Close = %v, want ErrClosed", err)
	}
	if err := s.Release(ctx, "a"); !errors.Is(err, ipam.ErrClosed) {
		t.Errorf("Release after Close = %v, want ErrClosed", err)
	}
	if _, _, err := s.Lookup("a"); !errors.Is(err, ipam.ErrClosed) {
		t.Errorf("Lookup after Close = %v, want ErrClosed", err)
	}
	if err := s.Check(); !errors.Is(err, ipam.ErrClosed) {
		t.Errorf("Check after Close = %v, want ErrClosed", err)
	}
}

func BenchmarkAllocateRelease(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cfg    ipam.Config
		noSync bool
	}{
		{"ipv4-16/nosync", cfg("10.0.0.0/16"), true},
		{"dual-stack/nosync", cfg("10.0.0.0/16", "2001:db8::/64"), true},
		{"ipv4-16/sync", cfg("10.0.0.0/16"), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var opts []ipam.Option
			if bc.noSync {
				opts = append(opts, ipam.WithNoSync())
			}
			a, err := ipam.Open(b.TempDir()+"/ipam.db", bc.cfg, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			ctx := context.Background()
			// 1000 owners already hold addresses, so the tree is not trivial.
			for i := range 1000 {
				if _, err := a.Allocate(ctx, fmt.Sprint("bg-", i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Allocate(ctx, "pod"); err != nil {
					b.Fatal(err)
				}
				if err := a.Release(ctx, "pod"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
