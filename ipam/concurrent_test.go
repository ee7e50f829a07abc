package ipam_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
)

// TestAllocator_concurrent runs 8 workers that each allocate 100 owners,
// release every third one and allocate the rest again. Each worker records
// what it was given; afterwards the histories must agree with the store,
// and no address may be held twice.
func TestAllocator_concurrent(t *testing.T) {
	const workers, perWorker = 8, 100
	s := mustOpen(t, cfg("10.0.0.0/22", "2001:db8::/64"))
	ctx := context.Background()

	history := make([]map[string][]netip.Prefix, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		held := map[string][]netip.Prefix{}
		history[w] = held
		wg.Go(func() {
			for i := range perWorker {
				owner := fmt.Sprintf("w%d-pod%d", w, i)
				got, err := s.Allocate(ctx, owner)
				if err != nil {
					errs <- err
					return
				}
				held[owner] = got
				if i%3 == 0 {
					if err := s.Release(ctx, owner); err != nil {
						errs <- err
						return
					}
					delete(held, owner)
				}
			}
			for owner, want := range held {
				got, err := s.Allocate(ctx, owner)
				if err != nil || !equalPrefixes(got, want) {
					errs <- fmt.Errorf("second Allocate(%q) = %v, %v; want %v", owner, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	s.mustNoDuplicates(t)

	total := 0
	for _, held := range history {
		for owner, want := range held {
			total++
			got, ok, err := s.Lookup(owner)
			if err != nil || !ok || !equalPrefixes(got, want) {
				t.Fatalf("Lookup(%q) = %v, %v, %v; want %v", owner, got, ok, err, want)
			}
		}
	}
	if owners, err := s.Owners(); err != nil || len(owners) != total {
		t.Fatalf("Owners() = %d owners, %v; want %d", len(owners), err, total)
	}
}
