package nsconn

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nrinet/nrinet/internal/nsexec"
)

// NFTables returns an nftables connection in the network namespace fd
// refers to (0: the process's), with opts, whose socket buffers take a
// whole table's transaction and its acknowledgements (SocketBuffer).
func NFTables(fd int, opts ...nftables.ConnOption) (*nftables.Conn, error) {
	opts = append([]nftables.ConnOption{nftables.WithSockOptions(bigBuffers)}, opts...)
	if fd != 0 {
		opts = append(opts, nftables.WithNetNSFd(fd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

// Do runs f on a thread of its own in the network namespace fd refers to
// (0: on the calling goroutine): nsexec.Do.
func Do(fd int, f func() error) error { return nsexec.Do(fd, f) }

// SocketBuffer is the netlink socket's send and receive buffer: a whole
// table goes in one message (one transaction), and the acknowledgements of
// its parts come back at once; the defaults (net.core.wmem_max and
// rmem_max) refuse a cluster's NetworkPolicy table ("message too long")
// and drop a dozen pods' port security acknowledgements ("no buffer
// space").
const SocketBuffer = 64 << 20

// bigBuffers sets the socket's buffers to SocketBuffer, above the
// system's maximum (SO_SNDBUFFORCE, SO_RCVBUFFORCE: CAP_NET_ADMIN, which
// writing nftables needs anyway).
func bigBuffers(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, SocketBuffer); serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, SocketBuffer)
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("netlink socket buffers: %w", serr)
	}
	return nil
}

// NetNS is the network namespace an agent works in, which its WithNetNS
// option sets: every agent embeds one, so that they check the option and
// connect alike. The zero value is the process's namespace.
type NetNS struct {
	fd int // 0: the process's network namespace
}

// Set makes n the namespace fd refers to (an open /var/run/netns/NAME or
// /proc/PID/ns/net), which the caller keeps open while the agent is used.
// Its errors start with pkg, the agent's package.
func (n *NetNS) Set(pkg string, fd int) error {
	if fd <= 0 {
		return fmt.Errorf("%s: network namespace file descriptor %d is not valid", pkg, fd)
	}
	if n.fd != 0 {
		return fmt.Errorf("%s: WithNetNS given twice", pkg)
	}
	n.fd = fd
	return nil
}

// FD returns the namespace's file descriptor, 0 for the process's.
func (n *NetNS) FD() int { return n.fd }

// NFTables returns an nftables connection in n (NFTables); its error
// starts with pkg.
func (n *NetNS) NFTables(pkg string) (*nftables.Conn, error) {
	c, err := NFTables(n.fd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	return c, nil
}

// DeleteTable deletes t and everything in it, in one transaction on c; an
// absent table is not an error.
func DeleteTable(c *nftables.Conn, t *nftables.Table) error {
	c.AddTable(t) // so that the deletion of an absent table succeeds
	c.DelTable(t)
	return c.Flush()
}
