package portsec_test

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// Frames a pod may send, built by hand for the attacks.

func ethFrame(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	f := append(append(append([]byte{}, dst...), src...), byte(etherType>>8), byte(etherType))
	return append(f, payload...)
}

// tagged inserts a VLAN tag (tpid, vid) after the MAC addresses.
func tagged(frame []byte, tpid, vid uint16) []byte {
	out := append([]byte{}, frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, vid&0xfff)
	return append(out, frame[12:]...)
}

func checksum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

func udp(sport, dport uint16, payload []byte) []byte {
	u := binary.BigEndian.AppendUint16(nil, sport)
	u = binary.BigEndian.AppendUint16(u, dport)
	u = binary.BigEndian.AppendUint16(u, uint16(8+len(payload)))
	u = append(u, 0, 0)
	return append(u, payload...)
}

func ipv4Packet(src, dst netip.Addr, proto byte, payload []byte) []byte {
	h := make([]byte, 20)
	h[0], h[8], h[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	copy(h[12:], src.AsSlice())
	copy(h[16:], dst.AsSlice())
	binary.BigEndian.PutUint16(h[10:], checksum(h, 0))
	return append(h, payload...)
}

// pseudo6 is the sum of IPv6's pseudo header for the upper-layer checksum.
func pseudo6(src, dst netip.Addr, proto byte, n int) uint32 {
	var sum uint32
	for _, a := range [][]byte{src.AsSlice(), dst.AsSlice()} {
		for i := 0; i < 16; i += 2 {
			sum += uint32(a[i])<<8 | uint32(a[i+1])
		}
	}
	return sum + uint32(n) + uint32(proto)
}

func ipv6Packet(src, dst netip.Addr, proto byte, payload []byte) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, proto, 255
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	copy(h[8:], src.AsSlice())
	copy(h[24:], dst.AsSlice())
	switch proto {
	case 17:
		binary.BigEndian.PutUint16(payload[6:], checksum(payload, pseudo6(src, dst, proto, len(payload))))
	case 58:
		binary.BigEndian.PutUint16(payload[2:], checksum(payload, pseudo6(src, dst, proto, len(payload))))
	}
	return append(h, payload...)
}

func arpPacket(op uint16, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
	p := []byte{0, 1, 8, 0, 6, 4}
	p = binary.BigEndian.AppendUint16(p, op)
	p = append(append(p, sha...), spa.AsSlice()...)
	return append(append(p, tha...), tpa.AsSlice()...)
}

// icmp6 is an ICMPv6 message (checksum filled in by ipv6Packet).
func icmp6(typ byte, body []byte) []byte { return append([]byte{typ, 0, 0, 0}, body...) }

// neighborAdvert is an unsolicited, overriding NA for target with a target
// link-layer address option.
func neighborAdvert(target netip.Addr, mac net.HardwareAddr) []byte {
	body := append([]byte{0x20, 0, 0, 0}, target.AsSlice()...) // O flag
	return icmp6(136, append(append(body, 2, 1), mac...))
}

// routerAdvert announces a default router and a SLAAC prefix.
func routerAdvert(prefix netip.Prefix, mac net.HardwareAddr) []byte {
	body := []byte{64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0} // hop limit, flags, lifetime 1800 s, reachable, retrans
	body = append(append(body, 1, 1), mac...)                 // source link-layer address
	pi := []byte{3, 4, byte(prefix.Bits()), 0xc0, 0, 0, 0x1c, 0x20, 0, 0, 0x1c, 0x20, 0, 0, 0, 0}
	pi = append(pi, prefix.Addr().AsSlice()...)
	return icmp6(134, append(body, pi...))
}

// redirect6 tells the receiver to send to dst through target.
func redirect6(target, dst netip.Addr) []byte {
	return icmp6(137, append(append([]byte{0, 0, 0, 0}, target.AsSlice()...), dst.AsSlice()...))
}

// redirect4 is an ICMP redirect (host) to gateway gw for the datagram orig.
func redirect4(gw netip.Addr, orig []byte) []byte {
	m := append([]byte{5, 1, 0, 0}, gw.AsSlice()...)
	m = append(m, orig[:28]...)
	binary.BigEndian.PutUint16(m[2:], checksum(m, 0))
	return m
}
