package ipam_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/nrinet/nrinet/ipam"
)

// TestAllocator_Check damages a store behind the allocator's back, the way
// a buggy writer would, and expects Check to name the damage.
func TestAllocator_Check(t *testing.T) {
	v4 := []byte("subnet/198.18.0.0/24")
	addr2 := netip.MustParseAddr("198.18.0.2").AsSlice()
	addr9 := netip.MustParseAddr("198.18.0.9").AsSlice()
	tests := []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"address without record", func(tx *bolt.Tx) error {
			return tx.Bucket(v4).Put(addr9, []byte("ghost"))
		}, `maps 198.18.0.9 to "ghost", which has no record`},
		{"record without address", func(tx *bolt.Tx) error {
			return tx.Bucket(v4).Delete(addr2)
		}, `owner "a" holds 198.18.0.2/24 but "subnet/198.18.0.0/24" maps it to ""`},
		{"address given to another owner", func(tx *bolt.Tx) error {
			return tx.Bucket(v4).Put(addr2, []byte("b"))
		}, `owner "a" holds 198.18.0.2/24 but "subnet/198.18.0.0/24" maps it to "b"`},
		{"bad record", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("owners")).Put([]byte("a"), []byte{1, 5, 1})
		}, `owner "a": truncated record`},
		{"address twice", func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("subnet/198.18.0.0/23"))
			if err != nil {
				return err
			}
			return b.Put(addr2, []byte("a"))
		}, `address 198.18.0.2 is held by`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg("198.18.0.0/24")
			s := mustOpen(t, c)
			s.mustAllocate(t, "a")
			if err := s.Check(); err != nil {
				t.Fatalf("Check before damage: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(s.path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()

			a, err := ipam.Open(s.path, c)
			if err != nil {
				t.Fatal(err)
			}
			err = a.Check()
			if !errors.Is(err, ipam.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v, want ErrCorrupt containing %q", err, tc.want)
			}
			// Undo, so the cleanup's Check passes: drop the owner's record and
			// the damaged subnet buckets.
			a.Close()
			db, err = bolt.Open(s.path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error {
				tx.DeleteBucket([]byte("owners"))
				tx.DeleteBucket(v4)
				tx.DeleteBucket([]byte("subnet/198.18.0.0/23"))
				return nil
			})
			db.Close()
		})
	}
}
