package testutil

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Frames a pod may send, built by hand (for tests that play an attacker
// with CAP_NET_RAW): Ethernet, VLAN tags, IPv4, IPv6, UDP, ARP and the
// ICMP messages of neighbour discovery and routing.

// EthFrame is an Ethernet frame.
func EthFrame(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	f := append(append(append([]byte{}, dst...), src...), byte(etherType>>8), byte(etherType))
	return append(f, payload...)
}

// tagged inserts a VLAN tag (tpid, vid) after the MAC addresses.
func VLANTagged(frame []byte, tpid, vid uint16) []byte {
	out := append([]byte{}, frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, vid&0xfff)
	return append(out, frame[12:]...)
}

func inetChecksum(b []byte, sum uint32) uint16 {
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

// UDP is a UDP datagram (checksum 0 over IPv4; IPv6Packet fills it in).
func UDP(sport, dport uint16, payload []byte) []byte {
	u := binary.BigEndian.AppendUint16(nil, sport)
	u = binary.BigEndian.AppendUint16(u, dport)
	u = binary.BigEndian.AppendUint16(u, uint16(8+len(payload)))
	u = append(u, 0, 0)
	return append(u, payload...)
}

// IPv4Packet is an IPv4 packet with its header checksum.
func IPv4Packet(src, dst netip.Addr, proto byte, payload []byte) []byte {
	h := make([]byte, 20)
	h[0], h[8], h[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	copy(h[12:], src.AsSlice())
	copy(h[16:], dst.AsSlice())
	binary.BigEndian.PutUint16(h[10:], inetChecksum(h, 0))
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

// IPv6Packet is an IPv6 packet; a UDP or ICMPv6 payload gets its
// checksum.
func IPv6Packet(src, dst netip.Addr, proto byte, payload []byte) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, proto, 255
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	copy(h[8:], src.AsSlice())
	copy(h[24:], dst.AsSlice())
	switch proto {
	case 17:
		binary.BigEndian.PutUint16(payload[6:], inetChecksum(payload, pseudo6(src, dst, proto, len(payload))))
	case 58:
		binary.BigEndian.PutUint16(payload[2:], inetChecksum(payload, pseudo6(src, dst, proto, len(payload))))
	}
	return append(h, payload...)
}

// ARPPacket is an Ethernet/IPv4 ARP message (op 1 request, 2 reply).
func ARPPacket(op uint16, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
	p := []byte{0, 1, 8, 0, 6, 4}
	p = binary.BigEndian.AppendUint16(p, op)
	p = append(append(p, sha...), spa.AsSlice()...)
	return append(append(p, tha...), tpa.AsSlice()...)
}

// icmp6 is an ICMPv6 message (checksum filled in by IPv6Packet).
func icmp6(typ byte, body []byte) []byte { return append([]byte{typ, 0, 0, 0}, body...) }

// NeighborAdvert is an unsolicited, overriding NA for target with a target
// link-layer address option.
func NeighborAdvert(target netip.Addr, mac net.HardwareAddr) []byte {
	body := append([]byte{0x20, 0, 0, 0}, target.AsSlice()...) // O flag
	return icmp6(136, append(append(body, 2, 1), mac...))
}

// RouterAdvert announces a default router and a SLAAC prefix.
func RouterAdvert(prefix netip.Prefix, mac net.HardwareAddr) []byte {
	body := []byte{64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0} // hop limit, flags, lifetime 1800 s, reachable, retrans
	body = append(append(body, 1, 1), mac...)                 // source link-layer address
	pi := []byte{3, 4, byte(prefix.Bits()), 0xc0, 0, 0, 0x1c, 0x20, 0, 0, 0x1c, 0x20, 0, 0, 0, 0}
	pi = append(pi, prefix.Addr().AsSlice()...)
	return icmp6(134, append(body, pi...))
}

// Redirect6 tells the receiver to send to dst through target.
func Redirect6(target, dst netip.Addr) []byte {
	return icmp6(137, append(append([]byte{0, 0, 0, 0}, target.AsSlice()...), dst.AsSlice()...))
}

// Redirect4 is an ICMP redirect (host) to gateway gw for the datagram orig.
func Redirect4(gw netip.Addr, orig []byte) []byte {
	m := append([]byte{5, 1, 0, 0}, gw.AsSlice()...)
	m = append(m, orig[:28]...)
	binary.BigEndian.PutUint16(m[2:], inetChecksum(m, 0))
	return m
}

// SendFrame sends frame as it is out of iface in the network namespace at
// path (an AF_PACKET socket, as a pod with CAP_NET_RAW can).
func SendFrame(path, iface string, frame []byte) error {
	return InNetNS(path, func() error {
		itf, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var dst [8]byte
		copy(dst[:], frame[:6])
		return unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: itf.Index, Halen: 6, Addr: dst})
	})
}

// A Sniffer reads every frame arriving at one interface.
type Sniffer struct {
	f      *os.File
	frames chan []byte
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Sniff starts reading the frames of iface in the namespace at path
// (an AF_PACKET socket bound to it); the test's end closes it. The
// socket is non-blocking and read through Go's poller, so that closing
// it ends the read (a blocking read would outlive the close, and take
// the frames of the next socket to get its descriptor number).
func Sniff(t testing.TB, path, iface string) *Sniffer {
	t.Helper()
	s := &Sniffer{frames: make(chan []byte, 1024)}
	err := InNetNS(path, func() error {
		itf, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: itf.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		s.f = os.NewFile(uintptr(fd), "sniffer "+iface)
		return nil
	})
	if err != nil {
		t.Fatalf("sniffing %s in %s: %v", iface, path, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.frames)
		buf := make([]byte, 65536)
		for {
			k, err := s.f.Read(buf)
			if err != nil {
				return
			}
			s.frames <- append([]byte{}, buf[:k]...)
		}
	}()
	t.Cleanup(func() {
		s.f.Close()
		for range s.frames { // let the reader finish its last send
		}
		<-done
	})
	return s
}

// Until sends fence with send, again every 200 ms until a frame that
// holds it arrives, and returns the frames seen before that one; it fails
// the test if none comes within 10 s. (A first packet may wait for
// neighbour resolution, or be lost to it.)
func (s *Sniffer) Until(t testing.TB, fence []byte, send func() error) [][]byte {
	t.Helper()
	var seen [][]byte
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	if err := send(); err != nil {
		t.Fatalf("sending the fence %q: %v", fence, err)
	}
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatalf("the sniffer stopped before the fence %q arrived", fence)
			}
			if bytes.Contains(f, fence) {
				return seen
			}
			seen = append(seen, f)
		case <-tick.C:
			if err := send(); err != nil {
				t.Fatalf("sending the fence %q: %v", fence, err)
			}
		case <-deadline:
			t.Fatalf("the fence %q never arrived (%d other frames did)", fence, len(seen))
		}
	}
}
