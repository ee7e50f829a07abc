package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/nrinet/nrinet/internal/unixsock"
)

// listen creates the plugin socket, mode 0600 whatever the process umask,
// its parent directory 0700 if missing (package unixsock).
func listen(path string) (net.Listener, error) {
	l, err := unixsock.Listen(path, 0o700)
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
		if err := r.checkPeer(conn); err != nil {
			r.log.Warn("refusing plugin connection", "error", err)
			conn.Close()
			continue
		}
		p, err := r.connect(conn, kindExternal, "", "")
		if err != nil {
			r.log.Warn("setting up plugin connection failed", "error", err)
			conn.Close()
			continue
		}
		if !r.track() {
			p.close(ErrClosed)
			return
		}
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

// checkPeer refuses a connection from a process whose user is not one of
// WithAllowedPluginUIDs, when that option is set.
func (r *Runtime) checkPeer(conn net.Conn) error {
	if r.cfg.allowedUIDs == nil {
		return nil
	}
	cred, err := peerCred(conn)
	if err != nil {
		return fmt.Errorf("reading the peer's credentials: %w", err)
	}
	if !slices.Contains(r.cfg.allowedUIDs, cred.uid) {
		return fmt.Errorf("process %d runs as uid %d, which may not register plugins (allowed: %v)", cred.pid, cred.uid, r.cfg.allowedUIDs)
	}
	return nil
}
