package ipam_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nrinet/nrinet/ipam"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path) // never returns
	}
	os.Exit(m.Run())
}

// store is an allocator under test with the path and config it was opened
// with, so tests can reopen it.
type store struct {
	*ipam.Allocator
	path string
	cfg  ipam.Config
}

// mustOpen opens a fresh store in t.TempDir. Like bbolt's btesting, a
// cleanup closes it, reopens it and fails the test if Check finds the
// invariant broken.
func mustOpen(t testing.TB, cfg ipam.Config) *store {
	t.Helper()
	return mustOpenAt(t, filepath.Join(t.TempDir(), "ipam.db"), cfg)
}

func mustOpenAt(t testing.TB, path string, cfg ipam.Config) *store {
	t.Helper()
	a, err := ipam.Open(path, cfg, ipam.WithNoSync())
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	s := &store{Allocator: a, path: path, cfg: cfg}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		mustCheck(t, path, cfg)
	})
	return s
}

// mustCheck opens the store at path read-write, runs Check and closes it.
func mustCheck(t testing.TB, path string, cfg ipam.Config) {
	t.Helper()
	a, err := ipam.Open(path, cfg)
	if err != nil {
		t.Fatalf("reopen for Check: %v", err)
	}
	defer a.Close()
	if err := a.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// reopen closes s and opens the same file again, with cfg.
func (s *store) reopen(t testing.TB, cfg ipam.Config) *store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return mustOpenAt(t, s.path, cfg)
}

func (s *store) mustAllocate(t testing.TB, owner string) []netip.Prefix {
	t.Helper()
	got, err := s.Allocate(context.Background(), owner)
	if err != nil {
		t.Fatalf("Allocate(%q): %v", owner, err)
	}
	return got
}

func (s *store) mustRelease(t testing.TB, owner string) {
	t.Helper()
	if err := s.Release(context.Background(), owner); err != nil {
		t.Fatalf("Release(%q): %v", owner, err)
	}
}

// mustNoDuplicates fails if any address is listed twice across owners.
func (s *store) mustNoDuplicates(t testing.TB) {
	t.Helper()
	all, err := s.Allocations()
	if err != nil {
		t.Fatalf("Allocations: %v", err)
	}
	seen := map[netip.Addr]string{}
	for _, al := range all {
		if prev, ok := seen[al.Prefix.Addr()]; ok {
			t.Fatalf("address %s held by %q and %q", al.Prefix.Addr(), prev, al.Owner)
		}
		seen[al.Prefix.Addr()] = al.Owner
	}
}

func cfg(subnets ...string) ipam.Config {
	var c ipam.Config
	for _, s := range subnets {
		c.Subnets = append(c.Subnets, netip.MustParsePrefix(s))
	}
	return c
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func equalPrefixes(a, b []netip.Prefix) bool { return slices.Equal(a, b) }

func isExhausted(err error) bool { return errors.Is(err, ipam.ErrExhausted) }
