package l4proto

import "strconv"

// Protocol is a transport protocol, by its IP protocol number.
type Protocol uint8

// The protocols Kubernetes ports name.
const (
	TCP  Protocol = 6
	UDP  Protocol = 17
	SCTP Protocol = 132
)

// String returns "tcp", "udp" or "sctp" (nft's words), or "proto-N" for
// another protocol number N.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return "proto-" + strconv.Itoa(int(p))
}

// Known reports whether p is TCP, UDP or SCTP.
func (p Protocol) Known() bool { return p == TCP || p == UDP || p == SCTP }
