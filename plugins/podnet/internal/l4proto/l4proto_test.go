package l4proto_test

import (
	"fmt"
	"testing"

	"github.com/nrinet/nrinet/plugins/podnet/internal/l4proto"
)

func TestProtocol(t *testing.T) {
	for _, tc := range []struct {
		p     l4proto.Protocol
		str   string
		known bool
	}{
		{l4proto.TCP, "tcp", true},
		{l4proto.UDP, "udp", true},
		{l4proto.SCTP, "sctp", true},
		{1, "proto-1", false},
		{47, "proto-47", false},
		{0, "proto-0", false},
	} {
		if got := tc.p.String(); got != tc.str {
			t.Errorf("Protocol(%d).String() = %q, want %q", uint8(tc.p), got, tc.str)
		}
		if got := tc.p.Known(); got != tc.known {
			t.Errorf("Protocol(%d).Known() = %v, want %v", uint8(tc.p), got, tc.known)
		}
	}
}

func ExampleProtocol() {
	fmt.Println(l4proto.TCP, l4proto.Protocol(47))
	// Output: tcp proto-47
}
