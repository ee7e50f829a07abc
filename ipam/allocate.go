package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	bolt "go.etcd.io/bbolt"
)

// Allocate returns one address of each configured subnet for owner, as a
// prefix with the subnet's length (198.18.0.7/24), in [Config.Subnets]
// order.
//
// Allocate is idempotent: an owner that already holds addresses gets the
// same ones back, and only subnets where it holds none are allocated from
// (for example after a subnet was added to the config). All new addresses
// are stored in one bbolt transaction, so either every subnet allocates or
// nothing is stored.
//
// Addresses are chosen by next fit: each subnet remembers the address it
// handed out last and continues after it, wrapping around once, so a
// released address is not reused until the rest of the subnet has been
// used. The network address, the IPv4 broadcast address, the gateway and
// excluded addresses are skipped. A full subnet yields an
// [*ExhaustedError], which matches [ErrExhausted].
func (a *Allocator) Allocate(ctx context.Context, owner string) ([]netip.Prefix, error) {
	if err := checkOwner(owner); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ipam: allocate %q: %w", owner, err)
	}
	// Fast path for retries: a read transaction takes no write lock and
	// syncs nothing.
	var out []netip.Prefix
	err := a.view(func(tx *bolt.Tx) error {
		have, err := readOwner(tx, owner)
		if err != nil {
			return err
		}
		var missing int
		out, missing = a.match(have)
		if missing > 0 {
			out = nil
		}
		return nil
	})
	if err != nil || out != nil {
		return out, a.wrap("allocate", owner, err)
	}
	var added []netip.Prefix
	err = a.update(func(tx *bolt.Tx) error {
		added = added[:0]
		have, err := readOwner(tx, owner)
		if err != nil {
			return err
		}
		out, _ = a.match(have)
		for i := range a.subnets {
			if out[i].IsValid() {
				continue
			}
			s := &a.subnets[i]
			addr, err := s.find(ctx, tx)
			if err != nil {
				return err
			}
			b := tx.Bucket(s.bucket)
			if err := b.Put(addr.AsSlice(), []byte(owner)); err != nil {
				return err
			}
			if err := b.Put(cursorKeyName, addr.AsSlice()); err != nil {
				return err
			}
			out[i] = netip.PrefixFrom(addr, s.prefix.Bits())
			added = append(added, out[i])
		}
		if len(added) == 0 {
			return nil
		}
		rec := append(have, added...)
		return tx.Bucket(ownersBucketName).Put([]byte(owner), encodeRecord(rec))
	})
	if err != nil {
		return nil, a.wrap("allocate", owner, err)
	}
	if len(added) > 0 {
		a.log.Debug("ipam: allocated", "owner", owner, "addresses", added)
	}
	return out, nil
}

// match returns, in subnet order, the addresses of have that belong to the
// configured subnets, and how many subnets have none.
func (a *Allocator) match(have []netip.Prefix) (out []netip.Prefix, missing int) {
	out = make([]netip.Prefix, len(a.subnets))
	for i := range a.subnets {
		for _, p := range have {
			if a.subnets[i].holds(p) {
				out[i] = p
				break
			}
		}
		if !out[i].IsValid() {
			missing++
		}
	}
	return out, missing
}

// wrap prefixes err with the operation and owner. Errors that already say
// everything ([*ExhaustedError], [ErrClosed]) pass unchanged.
func (a *Allocator) wrap(op, owner string, err error) error {
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrExhausted) {
		return err
	}
	return wrapOp(fmt.Sprintf("%s %q", op, owner), err)
}

// wrapOp prefixes err with "ipam: op: ", except for [ErrClosed].
func wrapOp(op string, err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("ipam: %s: %w", op, err)
}
