package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// listen creates the plugin socket: the parent directory with mode 0700
// if missing, and a stale socket file replaced. A socket that still has a
// listener is left alone and reported.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("runtime: creating socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("runtime: %s exists and is not a socket; not replacing it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("runtime: another process is listening on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("runtime: removing stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return l, nil
}

// acceptLoop only accepts: each connection's handshake runs on its own
// goroutine, so one slow or silent plugin never delays another.
func (r *Runtime) acceptLoop(l net.Listener) {
	defer r.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Warn("accepting plugin connection failed", "error", err, "retryIn", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		p, err := r.connect(conn, kindExternal, "", "")
		if err != nil {
			r.log.Warn("setting up plugin connection failed", "error", err)
			conn.Close()
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.run(p)
		}()
	}
}

// connect sets up a plugin on conn and starts serving it.
func (r *Runtime) connect(conn net.Conn, kind, idx, name string) (*plugin, error) {
	p, err := r.newPlugin(conn, kind, idx, name)
	if err != nil {
		return nil, err
	}
	if err := r.admit(p); err != nil {
		p.close(err)
		return nil, err
	}
	p.start()
	return p, nil
}

// run takes a connected plugin through the handshake; on failure the
// connection is closed and the reason logged under the plugin's name.
func (r *Runtime) run(p *plugin) error {
	if err := p.handshake(r.ctx); err != nil {
		p.logger().Warn("plugin failed to join", "error", err)
		p.close(fmt.Errorf("handshake: %w", err))
		return err
	}
	return nil
}

// Connect admits a plugin on a connection the caller already has: one end
// of a socketpair or a net.Pipe whose other end a plugin serves, for
// instance a plugin built into the runtime's own process on the plugin
// library (plugin.WithConnection). It returns once the plugin registered
// and joined the dispatch list, or failed to; the Runtime owns conn from
// then on. It works whether or not external plugins are enabled.
func (r *Runtime) Connect(ctx context.Context, conn net.Conn) error {
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if !started {
		conn.Close()
		return errors.New("runtime: Connect before Start")
	}
	if !r.track() {
		conn.Close()
		return ErrClosed
	}
	defer r.wg.Done()
	p, err := r.connect(conn, kindPreConnected, "", "")
	if err != nil {
		conn.Close()
		return err
	}
	hctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if err := p.handshake(hctx); err != nil {
		p.logger().Warn("plugin failed to join", "error", err)
		p.close(fmt.Errorf("handshake: %w", err))
		return fmt.Errorf("runtime: pre-connected plugin: %w", err)
	}
	return nil
}
