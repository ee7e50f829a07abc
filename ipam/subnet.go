package ipam

import (
	"context"
	"net/netip"

	bolt "go.etcd.io/bbolt"
)

// ctxCheckEvery is how many candidate addresses a search examines between
// checks of its context.
const ctxCheckEvery = 1024

// addrRange is an inclusive range of addresses.
type addrRange struct{ from, to netip.Addr }

func (r addrRange) contains(a netip.Addr) bool {
	return r.from.Compare(a) <= 0 && a.Compare(r.to) <= 0
}

// shadow is a bucket of a subnet that is no longer configured but overlaps
// a configured one. Its addresses stay taken until their owners release
// them.
type shadow struct {
	prefix netip.Prefix
	bucket []byte
}

// subnet is one configured subnet, resolved for allocation. It is
// immutable after Open.
type subnet struct {
	prefix  netip.Prefix
	gateway netip.Addr
	// pool is the range allocation walks: the subnet minus its network
	// address and, for IPv4, its broadcast address.
	pool    addrRange
	exclude []addrRange // Config.Exclude entries, clipped to the pool
	bucket  []byte
	shadows []shadow
}

func newSubnet(cfg Config, p netip.Prefix) subnet {
	s := subnet{
		prefix:  p,
		gateway: cfg.gateway(p),
		pool:    addrRange{p.Addr().Next(), lastAddr(p)},
		bucket:  subnetBucketName(p),
	}
	if p.Addr().Is4() {
		s.pool.to = s.pool.to.Prev()
	}
	for _, x := range cfg.Exclude {
		if !x.Overlaps(p) {
			continue
		}
		r := addrRange{x.Addr(), lastAddr(x)}
		if r.from.Less(s.pool.from) {
			r.from = s.pool.from
		}
		if s.pool.to.Less(r.to) {
			r.to = s.pool.to
		}
		if !r.to.Less(r.from) {
			s.exclude = append(s.exclude, r)
		}
	}
	return s
}

// holds reports whether prefix p is an address of this subnet, in the form
// Allocate returns it.
func (s *subnet) holds(p netip.Prefix) bool {
	return p.Bits() == s.prefix.Bits() && s.prefix.Contains(p.Addr())
}

// find returns a free address by next fit: it walks up from the address
// after the stored cursor to the end of the pool, then from the start of
// the pool up to the cursor. Taken addresses, the gateway and excluded
// ranges are skipped (a whole excluded range in one step), so the work is
// bounded by the number of addresses in use plus the number of excluded
// ranges, never by the size of the subnet.
func (s *subnet) find(ctx context.Context, tx *bolt.Tx) (netip.Addr, error) {
	b := tx.Bucket(s.bucket)
	start := s.pool.from
	if v := b.Get(cursorKeyName); v != nil {
		if cur, ok := netip.AddrFromSlice(v); ok && s.pool.from.Compare(cur) <= 0 && cur.Less(s.pool.to) {
			start = cur.Next()
		}
	}
	a, err := s.scan(ctx, tx, b, addrRange{start, s.pool.to})
	if err == nil && !a.IsValid() && start != s.pool.from {
		a, err = s.scan(ctx, tx, b, addrRange{s.pool.from, start.Prev()})
	}
	if err == nil && !a.IsValid() {
		err = &ExhaustedError{Subnet: s.prefix}
	}
	return a, err
}

// scan returns the lowest free address in r, or the zero Addr.
func (s *subnet) scan(ctx context.Context, tx *bolt.Tx, b *bolt.Bucket, r addrRange) (netip.Addr, error) {
	var buf [16]byte
	n := 0
	for c := r.from; c.IsValid() && c.Compare(r.to) <= 0; {
		if n++; n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return netip.Addr{}, err
			}
		}
		if c == s.gateway {
			c = c.Next()
			continue
		}
		if x, ok := s.excluded(c); ok {
			c = x.to.Next()
			continue
		}
		if b.Get(addrKey(&buf, c)) != nil || s.shadowed(tx, c) {
			c = c.Next()
			continue
		}
		return c, nil
	}
	return netip.Addr{}, nil
}

func (s *subnet) excluded(a netip.Addr) (addrRange, bool) {
	for _, x := range s.exclude {
		if x.contains(a) {
			return x, true
		}
	}
	return addrRange{}, false
}

// shadowed reports whether a is still held in a stale overlapping bucket.
func (s *subnet) shadowed(tx *bolt.Tx, a netip.Addr) bool {
	var buf [16]byte
	for _, sh := range s.shadows {
		if !sh.prefix.Contains(a) {
			continue
		}
		if b := tx.Bucket(sh.bucket); b != nil && b.Get(addrKey(&buf, a)) != nil {
			return true
		}
	}
	return false
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	bits := p.Bits()
	if a.Is4() {
		b := a.As4()
		setHostBits(b[:], bits)
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	setHostBits(b[:], bits)
	return netip.AddrFrom16(b)
}

func setHostBits(b []byte, bits int) {
	for i := range b {
		switch lo := i * 8; {
		case lo >= bits:
			b[i] = 0xff
		case lo+8 > bits:
			b[i] |= 0xff >> (bits - lo)
		}
	}
}
