package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nflog "github.com/florianl/go-nflog/v2"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// LogDenied is the logging of denied packets ([WithLogDenied]): the
// table sends each packet it denies, at most Rate per Per for the whole
// node after a burst of Burst, to the nflog group Group, where a
// [DenyLog] reads it.
type LogDenied struct {
	// Group is the nflog group (0 to 65535) the packets go to.
	Group uint16
	// Rate packets per Per (a second, a minute, an hour or a day) are
	// logged at most, once Burst have been.
	Rate uint64
	Per  time.Duration
	// Burst is how many packets may be logged at once, beyond the rate
	// (0: DefaultLogBurst, as nft's limit).
	Burst uint32
}

// DefaultLogBurst is LogDenied's burst when it gives none; MaxLogBurst
// the largest (the kernel keeps the burst's time, in nanoseconds, in 64
// bits: a burst of 10,000 a day's worth fits).
const (
	DefaultLogBurst = 5
	MaxLogBurst     = 10000
)

// The deny log's nflog messages: the prefix ("nrinet-netpol " and the
// chain's name, 33 bytes) and how much of the packet they carry (its
// network and transport headers).
const (
	logPrefix  = "nrinet-netpol "
	logSnaplen = 128
)

func (l LogDenied) validate() error {
	if l.Rate == 0 {
		return errors.New("netpol: WithLogDenied: rate 0")
	}
	switch l.Per {
	case time.Second, time.Minute, time.Hour, 24 * time.Hour:
	default:
		return fmt.Errorf("netpol: WithLogDenied: rate per %v: want a second, a minute, an hour or a day", l.Per)
	}
	if l.Burst > MaxLogBurst {
		return fmt.Errorf("netpol: WithLogDenied: burst %d is more than %d", l.Burst, MaxLogBurst)
	}
	return nil
}

// limit is the log's limit object: over the rate (it matches the packets
// beyond it).
func (l LogDenied) limit() *expr.Limit {
	burst := l.Burst
	if burst == 0 {
		burst = DefaultLogBurst
	}
	return &expr.Limit{Type: expr.LimitTypePkts, Rate: l.Rate, Unit: expr.LimitTime(l.Per / time.Second), Burst: burst, Over: true}
}

// WithLogDenied makes the table log the packets it denies to an nflog
// group, at most at l's rate: before a pod's chain drops a packet, the
// packet goes to the group with a prefix naming the chain, unless the
// rate is exceeded (then it is counted in [Counters].Unlogged). Only
// packets that open a connection reach that drop, and the limit is one
// for the whole node: logging costs established connections nothing,
// and the log no more than the rate. [Enforcer.OpenDenyLog] reads the
// group.
func WithLogDenied(l LogDenied) Option {
	return func(e *Enforcer) error {
		if err := l.validate(); err != nil {
			return err
		}
		if e.logDenied != nil {
			return errors.New("netpol: WithLogDenied given twice")
		}
		e.logDenied = &l
		return nil
	}
}

// DenyLog reads the packets the table logs ([WithLogDenied]) from their
// nflog group, in the Enforcer's network namespace, and writes one line
// per packet: its source, destination and destination port, the
// direction, the pod whose chain denied it and the policies that isolate
// the pod there, none of which allows it. An [Enforcer.OpenDenyLog]
// starts it; Close stops it.
type DenyLog struct {
	e   *Enforcer
	log *slog.Logger
	nf  *nflog.Nflog

	cancel   context.CancelFunc
	stopping atomic.Bool
	done     chan struct{} // closed when the reading has ended
	once     sync.Once
	closed   sync.Once
	closeErr error
}

// denyLogReadBuffer is the DenyLog socket's receive buffer: the messages
// a burst of the log's rate brings at once, and many more.
const denyLogReadBuffer = 4 << 20

// OpenDenyLog binds the nflog group of the Enforcer's WithLogDenied in
// its network namespace and reads it until Close, writing each denied
// packet to log (Info, "NetworkPolicy denied a packet: no policy allows
// it"). It fails when the Enforcer logs nothing, or when the group is
// another socket's. A DenyLog survives bursts: when the kernel finds its
// socket full it drops messages, which are counted
// ([Counters].LogOverruns), and reading goes on.
func (e *Enforcer) OpenDenyLog(log *slog.Logger) (*DenyLog, error) {
	if e.logDenied == nil {
		return nil, errors.New("netpol: OpenDenyLog: the Enforcer logs no denied packets (WithLogDenied)")
	}
	if log == nil {
		return nil, errors.New("netpol: OpenDenyLog: nil logger")
	}
	return e.openDenyLog(log, denyLogReadBuffer)
}

func (e *Enforcer) openDenyLog(log *slog.Logger, readBuffer int) (*DenyLog, error) {
	group := e.logDenied.Group
	nf, err := nflog.Open(&nflog.Config{
		NetNS: e.ns.FD(), Group: group, Copymode: nflog.CopyPacket, Bufsize: logSnaplen,
		// One message per packet, at once (the kernel's default waits
		// for 100 or a second).
		QThresh: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("netpol: deny log: opening nflog group %d: %w", group, err)
	}
	if err := setReadBuffer(nf.Con, readBuffer); err != nil {
		nf.Close()
		return nil, fmt.Errorf("netpol: deny log: nflog group %d: %w", group, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &DenyLog{e: e, log: log, nf: nf, cancel: cancel, done: make(chan struct{})}
	if err := nf.RegisterWithErrorFunc(ctx, d.packet, d.failed); err != nil {
		cancel()
		nf.Close()
		return nil, fmt.Errorf("netpol: deny log: binding nflog group %d (a group has one reader: does another program read it?): %w", group, err)
	}
	return d, nil
}

// setReadBuffer sets c's receive buffer to n bytes, above the system's
// maximum (SO_RCVBUFFORCE: CAP_NET_ADMIN, which nftables needs anyway).
func setReadBuffer(c *netlink.Conn, n int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("receive buffer of %d bytes: %w", n, serr)
	}
	return nil
}

// end notes that the reading ends (the callback returning it returns
// non-zero, which ends go-nflog's loop).
func (d *DenyLog) end() int {
	d.once.Do(func() { close(d.done) })
	return 1
}

// failed is go-nflog's error callback: a full socket (messages lost) is
// counted and reading goes on; a deadline is Close's, or spurious; any
// other error ends the reading, logged.
func (d *DenyLog) failed(err error) int {
	if d.stopping.Load() {
		return d.end()
	}
	if errors.Is(err, unix.ENOBUFS) {
		d.e.overruns.Add(1)
		return 0
	}
	var op *netlink.OpError
	if errors.As(err, &op) && op.Timeout() {
		// Not Close's (it sets stopping first): no deadline should be
		// set; clear it rather than fail every read from now on, unless
		// Close came meanwhile.
		d.nf.Con.SetReadDeadline(time.Time{})
		if d.stopping.Load() {
			return d.end()
		}
		return 0
	}
	d.log.Error("reading the denied packets' nflog group: the deny log stops", "group", d.e.logDenied.Group, "error", err)
	return d.end()
}

// packet is go-nflog's callback for one message: a denied packet.
func (d *DenyLog) packet(a nflog.Attribute) int {
	if d.stopping.Load() {
		return d.end()
	}
	if a.Prefix == nil || !strings.HasPrefix(*a.Prefix, logPrefix) {
		return 0 // not ours: another rule logging to the group
	}
	chain := strings.TrimPrefix(*a.Prefix, logPrefix)
	var payload []byte
	if a.Payload != nil {
		payload = *a.Payload
	}
	d.e.logged.Add(1)
	d.log.Info("NetworkPolicy denied a packet: no policy allows it", d.e.denied(chain, payload)...)
	return 0
}

// denied is the log line's attributes for a packet chain denied.
func (e *Enforcer) denied(chain string, payload []byte) []any {
	pk, ok := parsePacket(payload)
	var args []any
	if ok {
		args = append(args, "src", pk.src.String(), "dst", pk.dst.String(), "port", pk.port())
	} else {
		args = append(args, "packet", "unreadable")
	}
	e.mu.Lock()
	var o chainOwner
	known := false
	if e.prev != nil {
		o, known = e.prev.owners[chain]
	}
	e.mu.Unlock()
	if !known {
		dir := Egress
		if strings.HasPrefix(chain, "in-") {
			dir = Ingress
		}
		return append(args, "direction", dir, "pod", "unknown (chain "+chain+", not in the table nri-podnet wrote)")
	}
	return append(args, "direction", o.Direction, "pod", o.Pod, "isolatedBy", strings.Join(o.Policies, ","))
}

// Close stops reading and waits for the reading to end. go-nflog's
// goroutine has by then made its last call into the DenyLog; only its
// unbinding from the group (which closing the socket does anyway) may
// still be on its way out.
func (d *DenyLog) Close() error {
	d.closed.Do(func() {
		d.stopping.Store(true)
		// Wakes a Receive that waits (failed then ends the reading), or
		// fails the next one.
		if err := d.nf.Con.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
			d.end() // the socket is unusable: nothing reads it
		}
		<-d.done
		d.cancel()
		d.closeErr = d.nf.Close()
	})
	return d.closeErr
}

// packet is what a denied packet's headers say.
type packet struct {
	src, dst netip.Addr
	proto    uint8
	dport    uint16 // TCP, UDP and SCTP: the destination port
	hasPort  bool
}

// port is the packet's protocol and port as explain takes them
// ("8080/tcp"), or its protocol alone ("icmp", "proto-47").
func (p packet) port() string {
	name := Protocol(p.proto).String()
	switch p.proto {
	case unix.IPPROTO_ICMP:
		name = "icmp"
	case unix.IPPROTO_ICMPV6:
		name = "icmpv6"
	}
	if p.hasPort {
		return strconv.Itoa(int(p.dport)) + "/" + name
	}
	return name
}

// parsePacket reads an IPv4 or IPv6 packet's addresses, protocol and
// destination port (the first fragment's, behind IPv6's extension
// headers).
func parsePacket(b []byte) (packet, bool) {
	var p packet
	if len(b) < 1 {
		return p, false
	}
	var off int
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return p, false
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 {
			return p, false
		}
		p.src, _ = netip.AddrFromSlice(b[12:16])
		p.dst, _ = netip.AddrFromSlice(b[16:20])
		p.proto = b[9]
		if b[6]&0x1f != 0 || b[7] != 0 {
			return p, true // a later fragment: no transport header
		}
		off = ihl
	case 6:
		if len(b) < 40 {
			return p, false
		}
		p.src, _ = netip.AddrFromSlice(b[8:24])
		p.dst, _ = netip.AddrFromSlice(b[24:40])
		next := b[6]
		off = 40
	ext:
		for {
			switch next {
			case unix.IPPROTO_HOPOPTS, unix.IPPROTO_ROUTING, unix.IPPROTO_DSTOPTS:
				if len(b) < off+2 {
					p.proto = next
					return p, true
				}
				next, off = b[off], off+(int(b[off+1])+1)*8
			case unix.IPPROTO_FRAGMENT:
				if len(b) < off+8 {
					p.proto = next
					return p, true
				}
				later := b[off+2] != 0 || b[off+3]&0xf8 != 0
				next, off = b[off], off+8
				if later {
					p.proto = next
					return p, true
				}
			case unix.IPPROTO_AH:
				if len(b) < off+2 {
					p.proto = next
					return p, true
				}
				next, off = b[off], off+(int(b[off+1])+2)*4
			default:
				break ext
			}
		}
		p.proto = next
	default:
		return p, false
	}
	switch p.proto {
	case unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_SCTP:
		if len(b) >= off+4 {
			p.dport = uint16(b[off+2])<<8 | uint16(b[off+3])
			p.hasPort = true
		}
	}
	return p, true
}
