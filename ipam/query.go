package ipam

import (
	"fmt"
	"net/netip"

	bolt "go.etcd.io/bbolt"
)

// Allocation is one address held by an owner, as reported by
// [Allocator.Allocations].
type Allocation struct {
	Owner  string
	Prefix netip.Prefix // the address with its subnet's prefix length
	// Stale is true when the address belongs to a subnet that the current
	// [Config] no longer lists. Release the owner to free it.
	Stale bool
}

// Lookup returns the addresses owner holds, stale ones included, and
// whether it holds any.
func (a *Allocator) Lookup(owner string) ([]netip.Prefix, bool, error) {
	if err := checkOwner(owner); err != nil {
		return nil, false, err
	}
	var have []netip.Prefix
	err := a.view(func(tx *bolt.Tx) error {
		var err error
		have, err = readOwner(tx, owner)
		return err
	})
	if err != nil {
		return nil, false, a.wrap("lookup", owner, err)
	}
	return have, have != nil, nil
}

// Owners returns every owner that holds addresses, sorted.
func (a *Allocator) Owners() ([]string, error) {
	var owners []string
	err := a.view(func(tx *bolt.Tx) error {
		return tx.Bucket(ownersBucketName).ForEach(func(k, _ []byte) error {
			owners = append(owners, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, wrapOp("list owners", err)
	}
	return owners, nil
}

// Allocations returns every held address, sorted by owner and then in the
// order the owner received them.
func (a *Allocator) Allocations() ([]Allocation, error) {
	var out []Allocation
	err := a.view(func(tx *bolt.Tx) error {
		return tx.Bucket(ownersBucketName).ForEach(func(k, v []byte) error {
			owner := string(k)
			ps, err := decodeRecord(owner, v)
			if err != nil {
				return err
			}
			for _, p := range ps {
				_, ok := a.subnetFor(p)
				out = append(out, Allocation{Owner: owner, Prefix: p, Stale: !ok})
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrapOp("list allocations", err)
	}
	return out, nil
}

// String formats an allocation as `owner 198.18.0.7/24`, with " (stale)"
// appended for stale ones.
func (al Allocation) String() string {
	if al.Stale {
		return fmt.Sprintf("%s %s (stale)", al.Owner, al.Prefix)
	}
	return fmt.Sprintf("%s %s", al.Owner, al.Prefix)
}
