package ipam

import (
	"fmt"
	"net/netip"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Bucket and key names of the on-disk layout; the package documentation
// describes it.
const (
	layoutVersion = 1

	subnetBucketPrefix = "subnet/"
	ownersBucket       = "owners"
	metaBucket         = "meta"

	metaVersionKey = "version"
	metaSubnetsKey = "subnets"
	cursorKey      = "cursor"

	// maxOwnerLen keeps owners usable as bbolt keys.
	maxOwnerLen = bolt.MaxKeySize
)

var (
	ownersBucketName = []byte(ownersBucket)
	metaBucketName   = []byte(metaBucket)
	cursorKeyName    = []byte(cursorKey)
)

// subnetBucketName returns "subnet/<prefix>" for a masked prefix.
func subnetBucketName(p netip.Prefix) []byte {
	return []byte(subnetBucketPrefix + p.Masked().String())
}

// parseSubnetBucketName is the inverse of subnetBucketName; ok is false
// for names of other buckets.
func parseSubnetBucketName(name []byte) (p netip.Prefix, ok bool, err error) {
	s, found := strings.CutPrefix(string(name), subnetBucketPrefix)
	if !found {
		return netip.Prefix{}, false, nil
	}
	p, err = netip.ParsePrefix(s)
	if err != nil || p != p.Masked() {
		return netip.Prefix{}, true, fmt.Errorf("%w: bucket %q does not name a masked prefix", ErrCorrupt, name)
	}
	return p, true, nil
}

// isAddrKey reports whether k is an address key of a subnet bucket (4 or 16
// bytes), as opposed to the cursor key.
func isAddrKey(k []byte) bool { return len(k) == 4 || len(k) == 16 }

// addrKey writes a's bytes into buf and returns them; it does not allocate.
// The result is only valid until buf changes, so it must not be passed to
// Put, which keeps its arguments until commit.
func addrKey(buf *[16]byte, a netip.Addr) []byte {
	if a.Is4() {
		a4 := a.As4()
		copy(buf[:4], a4[:])
		return buf[:4]
	}
	*buf = a.As16()
	return buf[:]
}

// encodeRecord encodes an owner's addresses: a version byte, then for each
// prefix one length byte and netip.Prefix.MarshalBinary (address bytes and
// one prefix-length byte).
func encodeRecord(ps []netip.Prefix) []byte {
	out := make([]byte, 1, 1+len(ps)*18)
	out[0] = layoutVersion
	for _, p := range ps {
		n := len(out)
		out = append(out, 0)
		out, _ = p.AppendBinary(out) // cannot fail for valid prefixes
		out[n] = byte(len(out) - n - 1)
	}
	return out
}

// decodeRecord is the inverse of encodeRecord. Errors name the owner.
func decodeRecord(owner string, b []byte) ([]netip.Prefix, error) {
	if len(b) == 0 || b[0] != layoutVersion {
		return nil, fmt.Errorf("%w: owner %q: bad record version", ErrCorrupt, owner)
	}
	var ps []netip.Prefix
	for b = b[1:]; len(b) > 0; {
		n := int(b[0])
		if (n != 5 && n != 17) || len(b) < 1+n {
			return nil, fmt.Errorf("%w: owner %q: truncated record", ErrCorrupt, owner)
		}
		var p netip.Prefix
		if err := p.UnmarshalBinary(b[1 : 1+n]); err != nil || !p.IsValid() {
			return nil, fmt.Errorf("%w: owner %q: bad address in record", ErrCorrupt, owner)
		}
		ps = append(ps, p)
		b = b[1+n:]
	}
	return ps, nil
}

// readOwner returns the record of owner, or nil if it has none.
func readOwner(tx *bolt.Tx, owner string) ([]netip.Prefix, error) {
	v := tx.Bucket(ownersBucketName).Get([]byte(owner))
	if v == nil {
		return nil, nil
	}
	return decodeRecord(owner, v)
}

func checkOwner(owner string) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: empty owner", ErrInvalidOwner)
	case len(owner) > maxOwnerLen:
		return fmt.Errorf("%w: owner %.32q... is %d bytes (max %d)", ErrInvalidOwner, owner, len(owner), maxOwnerLen)
	}
	return nil
}
