package ipam

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Allocator hands out addresses from the subnets of a [Config] and records
// them in a bbolt file. Its methods are safe for concurrent use; writes are
// serialized by bbolt's single writer. Create one with [Open] and release
// the file with [Allocator.Close].
type Allocator struct {
	db      *bolt.DB
	path    string
	subnets []subnet
	log     *slog.Logger
}

// Open opens the store at path, creating it with mode 0600 if needed, and
// returns an Allocator for cfg. cfg must pass [Config.Validate].
//
// Only one process may have a store open; Open waits up to
// [WithTimeout]'s time for the file lock and then fails with [ErrLocked].
//
// The store may hold addresses from subnets that cfg no longer lists. They
// stay recorded, are reported as stale by [Allocator.Allocations], are
// freed by [Allocator.Release], and are not handed out again while held,
// even if a new subnet overlaps them.
func Open(path string, cfg Config, opts ...Option) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.timeout, NoSync: o.noSync})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("ipam: open %q: %w (waited %s)", path, ErrLocked, o.timeout)
		}
		return nil, fmt.Errorf("ipam: open %q: %w", path, err)
	}
	a := &Allocator{db: db, path: path, log: o.logger}
	for _, p := range cfg.Subnets {
		a.subnets = append(a.subnets, newSubnet(cfg, p))
	}
	if err := db.Update(a.initStore); err != nil {
		db.Close()
		return nil, fmt.Errorf("ipam: open %q: %w", path, err)
	}
	return a, nil
}

// initStore creates the buckets, checks and writes the meta bucket, and
// finds stale subnet buckets. It runs in Open's write transaction.
func (a *Allocator) initStore(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucketName)
	if err != nil {
		return err
	}
	if v := meta.Get([]byte(metaVersionKey)); v != nil && (len(v) != 1 || v[0] != layoutVersion) {
		return fmt.Errorf("%w: layout version %v, want [%d]", ErrIncompatibleStore, v, layoutVersion)
	}
	subnets := make([]netip.Prefix, len(a.subnets))
	for i, s := range a.subnets {
		subnets[i] = s.prefix
	}
	if err := meta.Put([]byte(metaVersionKey), []byte{layoutVersion}); err != nil {
		return err
	}
	if err := meta.Put([]byte(metaSubnetsKey), []byte(joinPrefixes(subnets))); err != nil {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(ownersBucketName); err != nil {
		return err
	}
	for _, s := range a.subnets {
		if _, err := tx.CreateBucketIfNotExists(s.bucket); err != nil {
			return err
		}
	}
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		p, ok, err := parseSubnetBucketName(name)
		if err != nil || !ok || slices.Contains(subnets, p) {
			return err
		}
		held := 0
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if isAddrKey(k) {
				held++
			}
		}
		if held == 0 {
			return nil
		}
		a.log.Warn("ipam: addresses held outside the configured subnets",
			"subnet", p, "addresses", held, "path", a.path)
		for i := range a.subnets {
			if s := &a.subnets[i]; s.prefix.Overlaps(p) {
				s.shadows = append(s.shadows, shadow{prefix: p, bucket: slices.Clone(name)})
			}
		}
		return nil
	})
}

// Close releases the store. Afterwards every method that reads or writes
// the store returns [ErrClosed].
// Close waits for running transactions and may be called more than once.
func (a *Allocator) Close() error {
	if err := a.db.Close(); err != nil {
		return fmt.Errorf("ipam: close %q: %w", a.path, err)
	}
	return nil
}

// Subnets returns the configured subnets, in [Config.Subnets] order.
func (a *Allocator) Subnets() []netip.Prefix {
	out := make([]netip.Prefix, len(a.subnets))
	for i, s := range a.subnets {
		out[i] = s.prefix
	}
	return out
}

// Gateways returns the gateway of each subnet with the subnet's prefix
// length (198.18.0.1/24), in [Config.Subnets] order, ready to be assigned
// to a bridge.
func (a *Allocator) Gateways() []netip.Prefix {
	out := make([]netip.Prefix, len(a.subnets))
	for i, s := range a.subnets {
		out[i] = netip.PrefixFrom(s.gateway, s.prefix.Bits())
	}
	return out
}

// subnetFor returns the configured subnet that p belongs to.
func (a *Allocator) subnetFor(p netip.Prefix) (*subnet, bool) {
	for i := range a.subnets {
		if a.subnets[i].holds(p) {
			return &a.subnets[i], true
		}
	}
	return nil, false
}

func (a *Allocator) view(fn func(*bolt.Tx) error) error {
	return closedErr(a.db.View(fn))
}

func (a *Allocator) update(fn func(*bolt.Tx) error) error {
	return closedErr(a.db.Update(fn))
}

// closedErr maps bbolt's "database not open" to [ErrClosed].
func closedErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
