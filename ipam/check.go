package ipam

import (
	"errors"
	"fmt"
	"net/netip"

	bolt "go.etcd.io/bbolt"
)

// maxCheckErrors caps how many problems Check reports.
const maxCheckErrors = 20

// Check verifies the store against the invariant in the package
// documentation: an address is in a subnet bucket if and only if the
// record of the owner it names lists it, no address is held twice, and
// every key and record decodes. It returns nil or problems joined with
// [errors.Join], each wrapping [ErrCorrupt]. Check reads the whole store
// in one read transaction; tests run it after every test.
func (a *Allocator) Check() error {
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < maxCheckErrors {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
		}
	}
	err := a.view(func(tx *bolt.Tx) error {
		owners := tx.Bucket(ownersBucketName)
		if owners == nil || tx.Bucket(metaBucketName) == nil {
			bad("missing %q or %q bucket", ownersBucket, metaBucket)
			return nil
		}
		// Owner records → subnet buckets.
		err := owners.ForEach(func(k, v []byte) error {
			owner := string(k)
			ps, err := decodeRecord(owner, v)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			seen := map[netip.Prefix]bool{}
			for _, p := range ps {
				subnet := p.Masked()
				if seen[subnet] {
					bad("owner %q holds two addresses in %s", owner, subnet)
				}
				seen[subnet] = true
				b := tx.Bucket(subnetBucketName(p))
				if b == nil {
					bad("owner %q holds %s but bucket %q is missing", owner, p, subnetBucketName(p))
					continue
				}
				if got := b.Get(p.Addr().AsSlice()); string(got) != owner {
					bad("owner %q holds %s but %q maps it to %q", owner, p, subnetBucketName(p), got)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Subnet buckets → owner records, and no address twice.
		holder := map[netip.Addr]string{}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			subnet, ok, err := parseSubnetBucketName(name)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			if !ok {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if string(k) == cursorKey {
					if c, ok := netip.AddrFromSlice(v); !ok || !subnet.Contains(c) {
						bad("bucket %q: cursor %x is not inside %s", name, v, subnet)
					}
					return nil
				}
				addr, ok := netip.AddrFromSlice(k)
				if !ok || !isAddrKey(k) || v == nil {
					bad("bucket %q: unexpected key %x", name, k)
					return nil
				}
				if !subnet.Contains(addr) {
					bad("bucket %q holds %s, outside the subnet", name, addr)
				}
				owner := string(v)
				if prev, dup := holder[addr]; dup {
					bad("address %s is held by %q and %q", addr, prev, owner)
				}
				holder[addr] = owner
				p := netip.PrefixFrom(addr, subnet.Bits())
				rec := owners.Get(v)
				if rec == nil {
					bad("bucket %q maps %s to %q, which has no record", name, addr, owner)
					return nil
				}
				ps, err := decodeRecord(owner, rec)
				if err != nil {
					return nil // reported above
				}
				for _, q := range ps {
					if q == p {
						return nil
					}
				}
				bad("bucket %q maps %s to %q, whose record %v lacks it", name, addr, owner, ps)
				return nil
			})
		})
	})
	if err != nil {
		return wrapOp("check", err)
	}
	return errors.Join(errs...)
}
