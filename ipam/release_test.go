package ipam_test

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestAllocator_ReleaseExcept(t *testing.T) {
	tests := []struct {
		name         string
		owners, keep []string
		wantReleased []string
	}{
		{"none kept", []string{"c", "a", "b"}, nil, []string{"a", "b", "c"}},
		{"all kept", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"some kept", []string{"a", "b", "c", "d"}, []string{"b", "d", "x"}, []string{"a", "c"}},
		{"empty store", nil, []string{"a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, cfg("198.18.0.0/24", "2001:db8::/64"))
			for _, o := range tc.owners {
				s.mustAllocate(t, o)
			}
			released, err := s.ReleaseExcept(context.Background(), func(o string) bool {
				return slices.Contains(tc.keep, o)
			})
			if err != nil || !slices.Equal(released, tc.wantReleased) {
				t.Fatalf("ReleaseExcept() = %q, %v; want %q", released, err, tc.wantReleased)
			}
			owners, err := s.Owners()
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range owners {
				if !slices.Contains(tc.keep, o) {
					t.Errorf("owner %q survived ReleaseExcept", o)
				}
			}
			if want := len(tc.owners) - len(tc.wantReleased); len(owners) != want {
				t.Errorf("Owners() = %q, want %d owners", owners, want)
			}
		})
	}
}

func TestAllocator_ReleaseExcept_errors(t *testing.T) {
	s := mustOpen(t, cfg("198.18.0.0/24"))
	s.mustAllocate(t, "a")
	if _, err := s.ReleaseExcept(context.Background(), nil); err == nil {
		t.Error("ReleaseExcept(nil) succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ReleaseExcept(ctx, func(string) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("ReleaseExcept(canceled) = %v, want context.Canceled", err)
	}
	// keep may call the allocator: it runs outside any transaction.
	released, err := s.ReleaseExcept(context.Background(), func(o string) bool {
		_, ok, _ := s.Lookup(o)
		return !ok
	})
	if err != nil || !slices.Equal(released, []string{"a"}) {
		t.Errorf("ReleaseExcept with reentrant keep = %q, %v", released, err)
	}
}
