package netpol_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParsePacket reads the headers of the packets a deny log line
// describes: addresses, protocol and destination port, behind IPv6
// extension headers, and none for a later fragment.
func TestParsePacket(t *testing.T) {
	const (
		v4    = "45000028 0000 4000 4006 0000 c6124d0a c6124d0b" // TCP, 198.18.77.10 -> .11
		v6hdr = "60000000 0010 %s 40 fd000198001800770000000000000010 fd000198001800770000000000000011"
	)
	v6 := func(next, rest string) string { return strings.Replace(v6hdr, "%s", next, 1) + rest }
	for _, tc := range []struct {
		name, pkt, src, dst, port string
		ok                        bool
	}{
		{"ipv4 tcp", v4 + "d4311f90 00000000", "198.18.77.10", "198.18.77.11", "8080/tcp", true},
		{"ipv4 udp", strings.Replace(v4, "4006", "4011", 1) + "d4312382 0009 0000", "198.18.77.10", "198.18.77.11", "9090/udp", true},
		{"ipv4 icmp", strings.Replace(v4, "4006", "4001", 1) + "0800 0000", "198.18.77.10", "198.18.77.11", "icmp", true},
		{"ipv4 later fragment", strings.Replace(v4, "4000 4006", "0001 4006", 1) + "d4311f90", "198.18.77.10", "198.18.77.11", "tcp", true},
		{"ipv4 options", "46000028 0000 4000 4011 0000 c6124d0a c6124d0b 01010100 d4310035 0009 0000", "198.18.77.10", "198.18.77.11", "53/udp", true},
		{"ipv6 udp", v6("11", "d4310035 0009 0000"), "fd00:198:18:77::10", "fd00:198:18:77::11", "53/udp", true},
		{"ipv6 hop-by-hop then tcp", v6("00", "06 00 0104 00000000 d4311f90"), "fd00:198:18:77::10", "fd00:198:18:77::11", "8080/tcp", true},
		{"ipv6 first fragment", v6("2c", "84 00 0001 00000001 d4310050"), "fd00:198:18:77::10", "fd00:198:18:77::11", "80/sctp", true},
		{"ipv6 later fragment", v6("2c", "06 00 0100 00000001 d4310050"), "fd00:198:18:77::10", "fd00:198:18:77::11", "tcp", true},
		{"ipv6 icmpv6", v6("3a", "80000000"), "fd00:198:18:77::10", "fd00:198:18:77::11", "icmpv6", true},
		{"ipv6 gre", v6("2f", "00000800"), "fd00:198:18:77::10", "fd00:198:18:77::11", "proto-47", true},
		{"truncated transport", v4 + "d431", "198.18.77.10", "198.18.77.11", "tcp", true},
		{"truncated ipv4", "45000028 0000", "", "", "", false},
		{"not ip", "00112233", "", "", "", false},
		{"empty", "", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, port, ok := netpol.ParsePacket(mustHex(t, tc.pkt))
			if ok != tc.ok || ok && (src != tc.src || dst != tc.dst || port != tc.port) {
				t.Errorf("parsePacket = %s %s %s %v, want %s %s %s %v", src, dst, port, ok, tc.src, tc.dst, tc.port, tc.ok)
			}
		})
	}
}

// FuzzParsePacket: no packet makes the parser fail or read past it.
func FuzzParsePacket(f *testing.F) {
	f.Add(mustHex(f, "45000028 0000 4000 4006 0000 c6124d0a c6124d0b d4311f90 00000000"))
	f.Add(mustHex(f, "60000000 0010 00 40 fd000198001800770000000000000010 fd000198001800770000000000000011 06 ff 0104 00000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		netpol.ParsePacket(b)
	})
}
