package nftexpr

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// AddrField is the network header offset and length of the source or the
// destination (dst) address of IPv4 or IPv6 (v6).
func AddrField(v6, dst bool) (off, n uint32) {
	switch {
	case !v6 && !dst:
		return 12, 4
	case !v6 && dst:
		return 16, 4
	case v6 && !dst:
		return 8, 16
	default:
		return 24, 16
	}
}

// NFProto is the netfilter protocol family of IPv4 or IPv6 (v6).
func NFProto(v6 bool) byte {
	if v6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// Family is "meta nfproto ipv4|ipv6".
func Family(v6 bool) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{NFProto(v6)}},
	}
}
