package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/keylock"
	"github.com/nrinet/nrinet/runtime"
)

// Names Version reports.
const (
	// RuntimeName is the runtime_name of Version.
	RuntimeName = "nrinetd"
	// CRIVersion is the version of Version, which the kubelet requires
	// to be "0.1.0".
	CRIVersion = "0.1.0"
	// RuntimeAPIVersion is the runtime_api_version of Version.
	RuntimeAPIVersion = "v1"
)

// MaxRequestSize is the largest CRI request a Server receives: what the
// kubelet sends at most (16 MiB). It is larger than any pod nrinetd
// accepts (api.MaxObjectSize), so that a pod too large gets a clear
// InvalidArgument from RunPodSandbox rather than a transport error.
const MaxRequestSize = 16 << 20

// Server is a CRI RuntimeService and ImageService for pod sandboxes. It
// does not own the runtime or the store: the caller starts and stops them.
type Server struct {
	criapi.UnimplementedRuntimeServiceServer

	rt      *runtime.Runtime
	store   *Store
	cfg     config
	log     *slog.Logger
	metrics *metrics
	names   names
	// locks serializes the changes to one sandbox (stop, remove, status
	// persistence) without ordering different sandboxes.
	locks keylock.Locks
	grpc  *grpc.Server

	mu     sync.Mutex // guards closed
	closed bool
}

var _ criapi.RuntimeServiceServer = (*Server)(nil)

// New returns a server for the sandboxes of store whose NRI events go to
// rt. It reserves the names of the stored sandboxes and reconciles them
// with the system: a READY sandbox whose network namespace no longer
// exists (the node rebooted) becomes NOTREADY, and the namespace a
// NOTREADY sandbox still has is deleted: mounted, or the empty file in
// NetNSDir that a crash between unmounting and deleting left. So is the
// namespace of a sandbox that was being created when nrinetd stopped.
// Other files in NetNSDir are never touched. Call it before
// rt.Start, so that joining plugins see the reconciled sandboxes.
func New(rt *runtime.Runtime, store *Store, opts ...Option) (*Server, error) {
	if rt == nil || store == nil {
		return nil, errors.New("cri: New: nil runtime or store")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	s := &Server{rt: rt, store: store, cfg: cfg, log: cfg.logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.registerer != nil {
		m, err := newMetrics(cfg.registerer, s)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	if cfg.stateDir != "" {
		was, err := SecureDir(cfg.stateDir)
		if err != nil {
			return nil, fmt.Errorf("cri: state directory: %w", err)
		}
		if was != 0 {
			s.log.Warn("the state directory was open to other users; it now has mode 0700", "dir", cfg.stateDir, "was", was.String())
		}
	}
	if err := s.reconcile(); err != nil {
		return nil, err
	}
	// WaitForHandlers: a forced stop still lets handlers finish before
	// the NRI runtime and the store are closed.
	s.grpc = grpc.NewServer(grpc.ChainUnaryInterceptor(s.metrics.interceptor, s.logRequest), grpc.WaitForHandlers(true),
		grpc.MaxRecvMsgSize(MaxRequestSize))
	criapi.RegisterRuntimeServiceServer(s.grpc, s)
	criapi.RegisterImageServiceServer(s.grpc, &imageService{s: s})
	return s, nil
}

// reconcile loads the stored sandboxes at start.
func (s *Server) reconcile() error {
	sbs, err := s.store.list()
	if err != nil {
		return fmt.Errorf("cri: loading sandboxes: %w", err)
	}
	ready := 0
	for _, sb := range sbs {
		if err := s.names.reserve(sb.reservedName(), sb.ID); err != nil {
			s.log.Warn("two stored sandboxes have the same name", "sandbox", sb.ID, "error", err)
		}
		switch {
		case sb.ready() && !sb.HostNetwork && !netnsExists(sb.NetNSPath):
			s.log.Warn("network namespace of a ready sandbox is gone; the sandbox is NOTREADY",
				"sandbox", sb.ID, "pod", sb.Namespace+"/"+sb.Name, "netns", sb.NetNSPath)
			// The plugins are told through Synchronize, which no longer
			// lists the pod; no NRI Stop without a namespace.
			err := s.store.update(sb.ID, func(sb *sandbox, _ *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
				sb.State, sb.NRIStopped = stateNotReady, true
				return &api.PodNetworkRecord{}, nil
			})
			if err != nil {
				return fmt.Errorf("cri: marking sandbox %q NOTREADY: %w", sb.ID, err)
			}
			s.deleteStaleNetNS(sb)
		case !sb.ready():
			// A stop may have been cut short: the plugins learn about it
			// through Synchronize, which does not list NOTREADY pods.
			if !sb.NRIStopped {
				err := s.store.update(sb.ID, func(sb *sandbox, rec *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
					sb.NRIStopped = true
					return rec, nil
				})
				if err != nil {
					return fmt.Errorf("cri: finishing the stop of sandbox %q: %w", sb.ID, err)
				}
			}
			s.deleteStaleNetNS(sb)
		case sb.ready():
			ready++
		}
	}
	s.log.Info("sandboxes loaded", "total", len(sbs), "ready", ready)
	s.sweepNetNS(sbs)
	return nil
}

// deleteStaleNetNS deletes the network namespace of a sandbox that must
// not have one (any more): a mounted one, or the empty file that a crash
// between unmounting and deleting leaves in NetNSDir.
func (s *Server) deleteStaleNetNS(sb *sandbox) {
	if sb.NetNSName == "" {
		return
	}
	if _, err := os.Lstat(netnsPath(sb.NetNSName)); err != nil {
		return
	}
	if err := deleteNetNS(sb.NetNSName); err != nil {
		s.log.Warn("deleting the network namespace of a sandbox that is not ready", "sandbox", sb.ID, "error", err)
		return
	}
	s.log.Info("deleted the network namespace of a sandbox that is not ready", "sandbox", sb.ID, "netns", sb.NetNSName)
}

// sweepNetNS deletes the namespaces of sandboxes nrinetd was creating
// when it was killed: each RunPodSandbox leaves a marker file in the state
// directory while its namespace is not yet committed (or undone).
// Namespaces of other nrinetd instances are never touched.
func (s *Server) sweepNetNS(sbs []*sandbox) {
	dir := s.creatingDir()
	if dir == "" {
		return
	}
	known := map[string]bool{}
	for _, sb := range sbs {
		known[sb.NetNSName] = true
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if !known[name] {
			if err := deleteNetNS(name); err != nil {
				s.log.Warn("deleting the network namespace of a sandbox that was never created", "netns", name, "error", err)
				continue
			}
			s.log.Info("deleted the network namespace of a sandbox that was never created", "netns", name)
		}
		os.Remove(filepath.Join(dir, name))
	}
}

// creatingDir holds the markers of namespaces being created; "" without a
// state directory.
func (s *Server) creatingDir() string {
	if s.cfg.stateDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.stateDir, "creating")
}

// markCreating notes that the namespace is being created; the returned
// function removes the note once the sandbox is committed or undone. The
// note needs no fsync: the namespace it guards does not survive a reboot.
func (s *Server) markCreating(name string) func() {
	dir := s.creatingDir()
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err == nil {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	return func() { os.Remove(filepath.Join(dir, name)) }
}

// Serve serves CRI on l until Shutdown or Close, or until ctx ends, which
// closes the server. It returns ErrClosed after a shutdown.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		l.Close()
		return ErrClosed
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err := s.grpc.Serve(l)
	if err == nil || errors.Is(err, grpc.ErrServerStopped) {
		return ErrClosed
	}
	return fmt.Errorf("cri: serving: %w", err)
}

// Shutdown stops accepting connections and waits for the requests in
// flight, until ctx ends; then it closes the server.
func (s *Server) Shutdown(ctx context.Context) error {
	s.markClosed()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// Close stops the server at once, cancelling requests in flight.
func (s *Server) Close() error {
	s.markClosed()
	s.grpc.Stop()
	return nil
}

func (s *Server) markClosed() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// logRequest logs each CRI request at debug level, and failures at info.
func (s *Server) logRequest(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	rsp, err := handler(ctx, req)
	attrs := []any{"method", shortMethod(info.FullMethod), "code", status.Code(err).String(), "duration", time.Since(start)}
	if err != nil {
		s.log.Info("CRI request failed", append(attrs, "error", err)...)
	} else {
		s.log.Debug("CRI request", attrs...)
	}
	return rsp, err
}

// cleanupContext is the context for work that must finish although the
// caller gave up: it keeps ctx's values, not its cancellation.
func (s *Server) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.cleanupTimeout)
}
