package ipam

import (
	"math"
	"math/big"
	"net/netip"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Usage is how much of one configured subnet is taken, as reported by
// [Allocator.Usage].
type Usage struct {
	Subnet netip.Prefix
	// InUse is the number of addresses of the subnet that owners hold
	// (gateway or excluded addresses an owner got before the
	// configuration reserved them included).
	InUse uint64
	// Free is the number of addresses Allocate can still hand out from
	// the subnet: all of them but the network address, the IPv4
	// broadcast address, the gateway, [Config.Exclude], the ones held,
	// and the ones still held in a no longer configured subnet that
	// overlaps it. It saturates at math.MaxUint64, which a subnet larger
	// than an IPv6 /64 can exceed.
	Free uint64
}

// Usage returns the usage of each configured subnet, in [Config.Subnets]
// order, from one read transaction. Its cost is proportional to the
// number of addresses held, not to the size of the subnets.
func (a *Allocator) Usage() ([]Usage, error) {
	out := make([]Usage, len(a.subnets))
	err := a.view(func(tx *bolt.Tx) error {
		for i := range a.subnets {
			out[i] = a.subnets[i].usage(tx)
		}
		return nil
	})
	if err != nil {
		return nil, wrapOp("usage", err)
	}
	return out, nil
}

// usage counts the subnet's addresses in tx.
func (s *subnet) usage(tx *bolt.Tx) Usage {
	u := Usage{Subnet: s.prefix}
	reserved := s.reserved()
	free := rangeSize(s.pool)
	for _, r := range reserved {
		free.Sub(free, rangeSize(r))
	}
	isReserved := func(a netip.Addr) bool {
		for _, r := range reserved {
			if r.contains(a) {
				return true
			}
		}
		return false
	}
	taken := int64(0)
	b := tx.Bucket(s.bucket)
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if !isAddrKey(k) {
			continue
		}
		u.InUse++
		if a, ok := netip.AddrFromSlice(k); ok && s.pool.contains(a) && !isReserved(a) {
			taken++
		}
	}
	// Addresses of stale overlapping subnets are not allocatable either;
	// one also in the subnet's own bucket was counted above.
	var buf [16]byte
	for _, sh := range s.shadows {
		sb := tx.Bucket(sh.bucket)
		if sb == nil {
			continue
		}
		c := sb.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			a, ok := netip.AddrFromSlice(k)
			if !isAddrKey(k) || !ok || !s.pool.contains(a) || isReserved(a) || b.Get(addrKey(&buf, a)) != nil {
				continue
			}
			taken++
		}
	}
	free.Sub(free, big.NewInt(taken))
	switch {
	case free.Sign() < 0:
		u.Free = 0
	case free.IsUint64():
		u.Free = free.Uint64()
	default:
		u.Free = math.MaxUint64
	}
	return u
}

// reserved returns the ranges of the pool that are never handed out (the
// gateway and the excluded ranges), sorted and merged so that none
// overlap.
func (s *subnet) reserved() []addrRange {
	rs := slices.Clone(s.exclude)
	if s.pool.contains(s.gateway) {
		rs = append(rs, addrRange{s.gateway, s.gateway})
	}
	slices.SortFunc(rs, func(x, y addrRange) int { return x.from.Compare(y.from) })
	var out []addrRange
	for _, r := range rs {
		if n := len(out); n > 0 && !out[n-1].to.Less(r.from.Prev()) {
			if out[n-1].to.Less(r.to) {
				out[n-1].to = r.to
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// rangeSize returns the number of addresses in r.
func rangeSize(r addrRange) *big.Int {
	from := new(big.Int).SetBytes(r.from.AsSlice())
	n := new(big.Int).SetBytes(r.to.AsSlice())
	n.Sub(n, from)
	return n.Add(n, big.NewInt(1))
}
