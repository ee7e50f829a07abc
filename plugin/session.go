package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/mux"
)

// session is one connection to a runtime, from connect to close.
type session struct {
	stub   *Stub
	mux    *mux.Mux
	server *ttrpc.Server
	client *ttrpc.Client

	configured chan struct{} // closed when Configure succeeded
	done       chan struct{} // closed when the session ended
	closeOnce  sync.Once
	wg         sync.WaitGroup // server and watcher goroutines
	// calledBack is closed when the on-close callback has returned (at
	// close if there is none). The callback runs apart from wg, so that it
	// may call Stop, which waits for wg but not for the callback.
	calledBack chan struct{}

	mu         sync.Mutex // guards the fields below
	info       RuntimeInfo
	isConfig   bool
	configErr  error
	refused    *NoNetworkExtensionError // the plugin refused the runtime in Configure
	err        error
	shutdown   bool // the runtime sent Shutdown
	synced     bool // the plugin answered the last chunk of Synchronize
	syncPods   []*api.PodSandbox
	syncCtrs   []*api.Container
	syncChunks int
}

// newSession sets up the multiplexer and both ttrpc ends on conn and starts
// serving the Plugin service.
func newSession(s *Stub, conn net.Conn) (*session, error) {
	m, err := mux.New(conn)
	if err != nil {
		return nil, err
	}
	l, err := m.Listen(mux.PluginServiceConn)
	if err != nil {
		return nil, err
	}
	rc, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		return nil, err
	}
	server, err := ttrpc.NewServer(s.cfg.serverOpts...)
	if err != nil {
		return nil, err
	}
	sess := &session{
		stub:       s,
		mux:        m,
		server:     server,
		configured: make(chan struct{}),
		done:       make(chan struct{}),
		calledBack: make(chan struct{}),
		info: RuntimeInfo{
			RegistrationTimeout: api.DefaultRegistrationTimeout,
			RequestTimeout:      api.DefaultRequestTimeout,
		},
	}
	api.RegisterFastPluginService(server, &service{sess: sess, stub: s})
	sess.client = ttrpc.NewClient(rc, append(slices.Clone(s.cfg.clientOpts), ttrpc.WithOnClose(func() {
		sess.close(connectionError(m))
	}))...)

	sess.wg.Add(2)
	go func() {
		defer sess.wg.Done()
		err := server.Serve(context.Background(), l)
		switch {
		case err == nil || errors.Is(err, ttrpc.ErrServerClosed):
		case m.Err() != nil:
			sess.close(connectionError(m)) // the trunk broke: report why
		default:
			sess.close(fmt.Errorf("serving plugin service: %w", err))
		}
	}()
	go func() {
		defer sess.wg.Done()
		select {
		case <-m.Done():
			sess.close(connectionError(m))
		case <-sess.done:
		}
	}()
	m.Start()
	return sess, nil
}

// connectionError describes why the trunk ended.
func connectionError(m *mux.Mux) error {
	err := m.Err()
	if err == nil || errors.Is(err, mux.ErrClosed) {
		return errors.New("connection to runtime closed")
	}
	return fmt.Errorf("connection to runtime lost: %w", err)
}

// handshake registers the plugin and waits for Configure.
func (sess *session) handshake(ctx context.Context) error {
	s := sess.stub
	regCtx, cancel := context.WithTimeout(ctx, api.DefaultRegistrationTimeout)
	defer cancel()
	err := api.Call(regCtx, sess.client, api.RuntimeServiceName, "RegisterPlugin", &api.RegisterPluginRequest{
		PluginName: s.name,
		PluginIdx:  s.idx,
		NRIVersion: api.Version,
	}, &api.Empty{})
	if err != nil {
		select {
		case <-sess.configured:
			// The answer to RegisterPlugin and the runtime's Configure
			// travel on different connections of the multiplexer: the
			// runtime configured the plugin, so it accepted the
			// registration, and then closed the connection before its
			// answer got here. How the session ended is for the caller
			// to see.
		default:
			sess.mu.Lock()
			configErr, refused := sess.configErr, sess.refused
			sess.mu.Unlock()
			if refused != nil {
				return refused
			}
			if configErr != nil {
				// The plugin's Configure failed, so the runtime
				// dropped the connection, which can take the answer
				// to RegisterPlugin with it: the Configure error is
				// why.
				return fmt.Errorf("waiting for Configure: %w", configErr)
			}
			return fmt.Errorf("RegisterPlugin: %w", err)
		}
	}
	// The runtime sends Configure as soon as it accepted the registration.
	wait := time.NewTimer(api.DefaultRegistrationTimeout + api.DefaultRequestTimeout)
	defer wait.Stop()
	select {
	case <-sess.configured:
		s.log.Debug("registered and configured")
		return nil
	case <-sess.done:
		sess.mu.Lock()
		err, configured, refused := cmpErr(sess.configErr, sess.err), sess.isConfig, sess.refused
		sess.mu.Unlock()
		if refused != nil {
			return refused
		}
		if configured {
			// Configured, then closed (both were ready): the session
			// ended after the handshake, which is for the caller to see.
			s.log.Debug("registered and configured")
			return nil
		}
		return fmt.Errorf("waiting for Configure: %w", err)
	case <-wait.C:
		if refused := sess.refusedErr(); refused != nil {
			return refused // and the runtime did not close the connection
		}
		return errors.New("runtime did not send Configure in time")
	case <-ctx.Done():
		return fmt.Errorf("waiting for Configure: %w", ctx.Err())
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// close ends the session once, with err as the reason, and reports it to the
// on-close callback.
func (sess *session) close(err error) {
	sess.closeOnce.Do(func() {
		s := sess.stub
		sess.mu.Lock()
		if sess.shutdown && !errors.Is(err, ErrStopped) {
			// The runtime asked us to shut down, then closed the
			// connection: an orderly end, not a loss.
			err = ErrShutdown
		}
		refused := sess.refused != nil
		if refused && !errors.Is(err, ErrStopped) {
			// The plugin refused the runtime in Configure, so the
			// runtime closed the connection: the refusal is why.
			err = sess.refused
		}
		sess.err = err
		sess.mu.Unlock()
		close(sess.done)
		sess.server.Close()
		sess.client.Close()
		sess.mux.Close()
		if errors.Is(err, ErrStopped) || errors.Is(err, ErrShutdown) || refused {
			// A refusal is Start's error: the caller reports it.
			s.log.Debug("connection ended", "reason", err)
		} else {
			s.log.Warn("connection to runtime ended", "error", err)
		}
		if s.cfg.onClose == nil {
			close(sess.calledBack)
			return
		}
		go func() {
			defer close(sess.calledBack)
			s.cfg.onClose(err)
		}()
	})
}

// wait waits for the session's goroutines, the on-close callback included,
// and returns why it ended.
func (sess *session) wait() error {
	err := sess.waitServing()
	<-sess.calledBack
	return err
}

// waitServing waits for the goroutines that served the connection, not
// for the on-close callback, and returns why the session ended. The
// callback may call it (through Stop).
func (sess *session) waitServing() error {
	<-sess.done
	sess.wg.Wait()
	sess.mux.Wait()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.err
}

func (sess *session) isDone() bool {
	select {
	case <-sess.done:
		return true
	default:
		return false
	}
}

// wasSynchronized reports whether the plugin answered Synchronize on this
// connection.
func (sess *session) wasSynchronized() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.synced
}

// refusedErr returns the plugin's refusal of the runtime, nil if none.
func (sess *session) refusedErr() *NoNetworkExtensionError {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.refused
}

func (sess *session) requestTimeout() time.Duration {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.info.RequestTimeout
}

func (sess *session) runtimeInfo() (RuntimeInfo, bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.info, sess.isConfig
}
