// Package ipam is a persistent IP address allocator for pod networks. It
// hands each owner (a pod ID) one address from each configured subnet, IPv4,
// IPv6 or both, and records the result in a [bbolt] file so that addresses
// survive restarts of the network plugin.
//
//	cfg, err := ipam.ParseConfig([]string{"198.18.0.0/24", "2001:db8::/64"}, nil, nil)
//	...
//	a, err := ipam.Open("/var/lib/nrinet/ipam.db", cfg)
//	...
//	defer a.Close()
//	addrs, err := a.Allocate(ctx, podID) // [198.18.0.2/24 2001:db8::2/64]
//	...
//	err = a.Release(ctx, podID)
//
// Addresses are [net/netip] values throughout. The package imports nothing
// else from nrinet.
//
// # Basics
//
// A [Config] lists the subnets, the excluded addresses and the gateways; it
// is plain data with [Config.Validate], and [ParseConfig] builds one from
// strings. [Open] turns it into an [Allocator] bound to one file.
//
// [Allocator.Allocate] is idempotent: asking again for the same owner
// returns the same addresses, so a plugin can retry an ADD safely. Each call
// that stores something is one bbolt write transaction covering every
// subnet, so a dual-stack owner gets both addresses or neither.
// [Allocator.Release] is idempotent too. [Allocator.ReleaseExcept] frees the
// addresses of owners that no longer exist, for reconciliation when the
// plugin starts, and [Allocator.Lookup], [Allocator.Owners],
// [Allocator.Allocations] and [Allocator.Usage] (addresses in use and free
// per subnet, for metrics) read the store.
//
// Within a subnet the allocator uses next fit. Each subnet bucket keeps a
// cursor, the address handed out last, and a search walks up from the
// address after it to the end of the subnet, then from the start up to the
// cursor. Released addresses are therefore reused as late as possible,
// which keeps a stale ARP or conntrack entry of a deleted pod from hitting
// its successor. The walk skips runs of taken addresses and whole excluded
// ranges, so its cost is bounded by the number of addresses in use, not by
// the size of the subnet: a /64 works as well as a /24. A subnet with no
// free address yields an [*ExhaustedError] ("ipam: no free address in
// 198.18.0.0/30"), which matches [ErrExhausted].
//
// Never handed out: the network address, the IPv4 broadcast address, the
// gateway (by default the first host, .1 or ::1) and [Config.Exclude].
//
// # Storage layout
//
// The bbolt file holds these top-level buckets:
//
//	"meta"             "version" → layout version (one byte, 1)
//	                   "subnets" → the configured subnets, comma separated (informational)
//	"owners"           owner → record: version byte 1, then per address one length
//	                   byte and netip.Prefix.MarshalBinary (address bytes, prefix length)
//	"subnet/<prefix>"  address (4 or 16 bytes, netip.Addr.AsSlice) → owner
//	                   "cursor" → the address allocated last (a 6-byte key, so it
//	                   never collides with an address key)
//
// There is one "subnet/" bucket per subnet, named by its masked prefix, such
// as "subnet/198.18.0.0/24". The invariant, checked by [Allocator.Check],
// is: an address is in a subnet bucket if and only if the record of the
// owner it maps to lists it. Every change to both sides happens in one
// transaction, so a crash at any point, including kill -9, leaves no
// address both free and in use.
//
// # Changing the configuration
//
// The store is not bound to one Config. Opening it with different subnets
// keeps the existing records: addresses of subnets that are no longer
// configured are reported as stale by [Allocator.Allocations], are not
// returned by Allocate (which allocates from the new subnets instead), and
// are freed by Release. While held they are never handed out again, even
// if a new subnet overlaps them. A new gateway or exclusion does not evict
// an owner that already holds that address.
//
// # Concurrency
//
// An Allocator is safe for concurrent use by many goroutines. Reads run in
// parallel; writes are serialized by bbolt, which allows one writer at a
// time. A store can be open in only one process: [Open] waits
// [WithTimeout]'s time for the file lock and then fails with [ErrLocked].
//
// # Caveats
//
// Every write transaction ends with an fsync, which dominates the cost of
// Allocate and Release on real disks. [WithNoSync] trades that for
// durability against power loss and is meant for tests.
//
// The keep function of ReleaseExcept runs outside any transaction; an owner
// that allocates while it runs is not considered.
//
// [bbolt]: https://pkg.go.dev/go.etcd.io/bbolt
package ipam
