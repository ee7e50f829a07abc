package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	bolt "go.etcd.io/bbolt"
)

// Release frees every address owner holds, stale ones included, in one
// transaction. Releasing an owner that holds nothing is not an error, so
// Release may be retried.
func (a *Allocator) Release(ctx context.Context, owner string) error {
	if err := checkOwner(owner); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ipam: release %q: %w", owner, err)
	}
	var freed []netip.Prefix
	err := a.update(func(tx *bolt.Tx) error {
		var err error
		freed, err = a.releaseTx(tx, owner)
		return err
	})
	if err != nil {
		return a.wrap("release", owner, err)
	}
	if len(freed) > 0 {
		a.log.Debug("ipam: released", "owner", owner, "addresses", freed)
	}
	return nil
}

// ReleaseExcept releases every owner for which keep returns false and
// returns them, sorted. It is meant for reconciliation when a plugin
// starts: keep reports whether the owner (a pod) still exists.
//
// keep runs outside any transaction, so it may be slow or call the
// Allocator; the releases then happen in one transaction. Owners that
// allocate while keep runs are not considered.
func (a *Allocator) ReleaseExcept(ctx context.Context, keep func(owner string) bool) ([]string, error) {
	if keep == nil {
		return nil, errors.New("ipam: release except: nil keep function")
	}
	owners, err := a.Owners()
	if err != nil {
		return nil, err
	}
	var drop []string
	for _, o := range owners {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("ipam: release except: %w", err)
		}
		if !keep(o) {
			drop = append(drop, o)
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	var released []string
	err = a.update(func(tx *bolt.Tx) error {
		released = released[:0]
		for _, o := range drop {
			freed, err := a.releaseTx(tx, o)
			if err != nil {
				return err
			}
			if freed != nil {
				released = append(released, o)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapOp("release except", err)
	}
	a.log.Debug("ipam: released stale owners", "owners", released)
	return released, nil
}

// releaseTx removes owner and its addresses. It returns the freed
// addresses, or nil if owner had no record. An address whose subnet bucket
// names another owner is left alone (Check reports such damage). A subnet
// bucket that is no longer configured is deleted once empty.
func (a *Allocator) releaseTx(tx *bolt.Tx, owner string) ([]netip.Prefix, error) {
	owners := tx.Bucket(ownersBucketName)
	have, err := readOwner(tx, owner)
	if err != nil || have == nil {
		return nil, err
	}
	for _, p := range have {
		name := subnetBucketName(p)
		b := tx.Bucket(name)
		if b == nil {
			continue
		}
		key := p.Addr().AsSlice()
		if string(b.Get(key)) != owner {
			continue
		}
		if err := b.Delete(key); err != nil {
			return nil, err
		}
		if _, ok := a.subnetFor(p); !ok && emptySubnetBucket(b) {
			if err := tx.DeleteBucket(name); err != nil {
				return nil, err
			}
		}
	}
	if err := owners.Delete([]byte(owner)); err != nil {
		return nil, err
	}
	return have, nil
}

func emptySubnetBucket(b *bolt.Bucket) bool {
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if isAddrKey(k) {
			return false
		}
	}
	return true
}
