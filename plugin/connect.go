package plugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/nrinet/nrinet/api"
)

// connect returns the connection to the runtime: the one given with
// WithConnection, else the inherited socket named by NRI_PLUGIN_SOCKET,
// else a new connection to the socket path.
func (s *Stub) connect(ctx context.Context) (net.Conn, error) {
	if c := s.cfg.conn; c != nil {
		s.cfg.conn = nil // a connection serves one session
		return c, nil
	}
	if v := s.cfg.env(api.PluginSocketEnv); v != "" {
		if s.fdUsed {
			return nil, fmt.Errorf("the inherited socket %s=%s was closed with the previous connection; a plugin launched by the runtime cannot reconnect", api.PluginSocketEnv, v)
		}
		s.fdUsed = true
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 0 {
			return nil, fmt.Errorf("%s=%q is not a file descriptor number", api.PluginSocketEnv, v)
		}
		f := os.NewFile(uintptr(fd), "nri-plugin-socket")
		if f == nil {
			return nil, fmt.Errorf("%s=%d is not an open file descriptor", api.PluginSocketEnv, fd)
		}
		conn, err := net.FileConn(f)
		f.Close() // FileConn holds a duplicate
		if err != nil {
			return nil, fmt.Errorf("inherited socket %s=%d: %w", api.PluginSocketEnv, fd, err)
		}
		return conn, nil
	}
	dial := s.cfg.dial
	if dial == nil {
		dial = func(ctx context.Context, path string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
	}
	return dial(ctx, s.cfg.socketPath)
}
