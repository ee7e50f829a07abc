package nsconn

import (
	"fmt"

	"github.com/google/nftables"

	"github.com/nrinet/nrinet/internal/nsexec"
)

// NFTables returns an nftables connection in the network namespace fd
// refers to (0: the process's), with opts.
func NFTables(fd int, opts ...nftables.ConnOption) (*nftables.Conn, error) {
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
