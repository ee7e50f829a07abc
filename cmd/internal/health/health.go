// Package health serves a node agent's operational endpoints on one
// listener:
//
//	/healthz  200 "ok" while the process serves HTTP at all; it depends on
//	          nothing else (not on the container runtime, not on Kubernetes)
//	/readyz   200 "ok" when every readiness check passes, else 503 with the
//	          reasons of the failing checks on one line
//	/metrics  the Prometheus exposition of one *prometheus.Registry
//
// [Handler] builds the http.Handler; [Server] serves it on a TCP address
// with a lifecycle bound to a context; [AddFlag] defines the flag of its
// address, -http-address, the same in every command. The registry is the
// caller's: this package registers nothing globally.
package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports whether one part of the process is ready, and if not,
// why, in a short phrase that names the part. It is called on every
// /readyz request, so it must be cheap and safe for concurrent use. The
// plugin library's Stub.Ready has this shape.
type Check func() (ready bool, reason string)

// Handler returns the handler of /healthz, /readyz and /metrics. /readyz
// runs every check, in order; the process is ready when all pass (and
// when there are none). /metrics serves reg, which must not be nil.
// Only GET and HEAD are served; other methods get 405, other paths 404.
func Handler(reg *prometheus.Registry, checks ...Check) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reasons := NotReady(checks...); len(reasons) > 0 {
			reply(w, http.StatusServiceUnavailable, strings.Join(reasons, "; "))
			return
		}
		reply(w, http.StatusOK, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// NotReady runs the checks and returns the reasons of those that fail, in
// order; none if all pass. A failing check without a reason is reported
// as "not ready".
func NotReady(checks ...Check) []string {
	var reasons []string
	for _, c := range checks {
		if ok, why := c(); !ok {
			if why = oneLine(why); why == "" {
				why = "not ready"
			}
			reasons = append(reasons, why)
		}
	}
	return reasons
}

// oneLine joins the lines of s with spaces, so that the reason stays on
// one line of the response.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func reply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, body)
}

// ShutdownTimeout bounds how long [Server.Run] waits, once its context
// ended, for requests in flight to finish before it closes them.
const ShutdownTimeout = 5 * time.Second

// Server serves a handler on a TCP listener. Create it with [Listen] and
// serve with [Server.Run].
type Server struct {
	srv *http.Server
	l   net.Listener
}

// CheckAddress checks that addr is a TCP address Listen can take: a
// "host:port" whose host is empty, an IP address or a name and whose port
// is a number from 0 to 65535 or a service name. It binds nothing: a
// command calls it on its flags and configuration, where a bad address is
// a usage error, while Listen's own failure on a well-formed address (in
// use, not this host's) is an error of the moment.
func CheckAddress(addr string) error {
	if err := addressProblem(addr); err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	return nil
}

// addressProblem is what is wrong with addr for CheckAddress, without
// addr.
func addressProblem(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
	case strings.ContainsAny(host, " \t\n/"):
		err = fmt.Errorf("host %q is not an IP address or a name", host)
	case host != "" && net.ParseIP(host) == nil && strings.Trim(host, "0123456789.") == "":
		err = fmt.Errorf("host %q is not an IP address", host)
	default:
		_, err = net.LookupPort("tcp", port)
	}
	if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
		err = errors.New(ae.Err) // without its own copy of a part of addr
	}
	return err
}

// Listen binds addr ("host:port", ":9465"; port 0 picks a free port), so
// that a bad or busy address is reported before anything else starts,
// and returns a Server for h. The listener is closed by Run, or by Close
// if Run is never called.
func Listen(addr string, h http.Handler) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health: listening on %q: %w", addr, err)
	}
	return &Server{
		l: l,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
		},
	}, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Run serves until ctx ends, then shuts down: it stops accepting, waits
// up to [ShutdownTimeout] for requests in flight, closes what is left,
// and returns nil. If serving fails before ctx ends, Run returns that
// error. Either way, no goroutine of the server is left when Run returns.
// Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.l) }()
	select {
	case err := <-served:
		return fmt.Errorf("health: serving on %s: %w", s.l.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if err != nil {
		s.srv.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // requests in flight were closed: not an error of the server
	}
	return err
}

// Start runs [Server.Run] on a goroutine of its own, until stop is
// called; stop ends it, waits for it and returns what Run returned. stop
// may be called more than once. Use it instead of Run, not with it.
func (s *Server) Start() (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
}

// Checks is a list of readiness checks that grows while a process starts
// up: each part adds its check once it exists, and the server can serve
// before all of them do. The zero value is an empty list; it is safe for
// concurrent use.
type Checks struct {
	mu   sync.Mutex
	list []Check
}

// Add appends checks to the list.
func (c *Checks) Add(checks ...Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, checks...)
}

// Ready is the [Check] of the whole list: it passes when every check added
// passes (and when none was added), and otherwise gives the reasons of
// those that fail, in order, joined with "; ".
func (c *Checks) Ready() (bool, string) {
	c.mu.Lock()
	list := slices.Clone(c.list)
	c.mu.Unlock()
	if reasons := NotReady(list...); len(reasons) > 0 {
		return false, strings.Join(reasons, "; ")
	}
	return true, ""
}

// Close closes the listener of a server whose Run was never called.
func (s *Server) Close() error { return s.l.Close() }
