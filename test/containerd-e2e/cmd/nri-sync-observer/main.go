// Command nri-sync-observer is an NRI plugin, written on upstream's
// github.com/containerd/nri/pkg/stub (v0.12.5) as critest's NRI specs
// are, that joins a runtime again and again to see what a late-joining
// plugin learns. Each session connects to the runtime's NRI socket, takes
// the Synchronize request (holding the answer for a random time up to
// -hold, as critest's spec holds it, to widen the window in which
// containers are created), stays connected for -dwell, notes the time
// (the session's end: what was created before it must have reached the
// plugin), keeps recording events for -grace more, and disconnects. It
// prints one JSON line per session (package internal/syncwatch's Session)
// and exits after -sessions sessions, or on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"github.com/nrinet/nrinet/test/containerd-e2e/internal/syncwatch"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nri-sync-observer:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	socket, name, idx  string
	sessions           int
	hold, dwell, grace time.Duration
}

func run() error {
	var cfg config
	fs := flag.NewFlagSet("nri-sync-observer", flag.ContinueOnError)
	fs.StringVar(&cfg.socket, "socket", "", "the runtime's NRI socket")
	fs.StringVar(&cfg.name, "name", "sync-observer", "plugin name")
	fs.StringVar(&cfg.idx, "idx", "50", "plugin index")
	fs.IntVar(&cfg.sessions, "sessions", 0, "sessions to run (0: until SIGINT or SIGTERM)")
	fs.DurationVar(&cfg.hold, "hold", 300*time.Millisecond, "longest time the Synchronize answer is held")
	fs.DurationVar(&cfg.dwell, "dwell", 300*time.Millisecond, "time connected after Synchronize before the session's end")
	fs.DurationVar(&cfg.grace, "grace", 300*time.Millisecond, "time events are still recorded after the session's end")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if cfg.socket == "" {
		return errors.New("-socket is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	for i := 0; cfg.sessions == 0 || i < cfg.sessions; i++ {
		s, err := session(ctx, cfg, i)
		if ctx.Err() != nil {
			return nil // stopped: the unfinished session is not reported
		}
		if err != nil {
			s.Error = err.Error()
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}

// session connects once, as described in the package comment.
func session(ctx context.Context, cfg config, n int) (*syncwatch.Session, error) {
	o := &observer{s: &syncwatch.Session{N: n}, hold: cfg.hold, synced: make(chan struct{}), closed: make(chan struct{})}
	var closeOnce sync.Once
	st, err := stub.New(o, stub.WithSocketPath(cfg.socket), stub.WithPluginName(cfg.name), stub.WithPluginIdx(cfg.idx),
		stub.WithOnClose(func() { closeOnce.Do(func() { close(o.closed) }) }))
	if err != nil {
		return o.s, fmt.Errorf("plugin %s-%s: %w", cfg.idx, cfg.name, err)
	}
	o.s.Connect = time.Now().UnixNano()
	if err := st.Start(ctx); err != nil {
		return o.s, fmt.Errorf("plugin %s-%s: start: %w", cfg.idx, cfg.name, err)
	}
	defer st.Stop()
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-o.closed:
			return errors.New("the runtime closed the connection")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-o.synced:
	case <-o.closed:
		return o.snapshot(), errors.New("the runtime closed the connection before Synchronize")
	case <-time.After(30 * time.Second):
		return o.snapshot(), errors.New("no Synchronize within 30s")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := wait(cfg.dwell); err != nil {
		return o.snapshot(), err
	}
	o.mu.Lock()
	o.s.End = time.Now().UnixNano()
	o.mu.Unlock()
	if err := wait(cfg.grace); err != nil {
		return o.snapshot(), err
	}
	return o.snapshot(), nil
}

// observer records what one session learns.
type observer struct {
	hold   time.Duration
	synced chan struct{} // closed when Synchronize is answered
	closed chan struct{} // closed when the connection ends

	mu sync.Mutex // guards s
	s  *syncwatch.Session
}

// snapshot returns a copy of the session's record.
func (o *observer) snapshot() *syncwatch.Session {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := *o.s
	c.Events = append([]syncwatch.Event(nil), o.s.Events...)
	return &c
}

func (o *observer) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	o.mu.Lock()
	if o.s.Sync != 0 {
		o.mu.Unlock()
		return nil, errors.New("a second Synchronize in one connection")
	}
	o.s.Sync = time.Now().UnixNano()
	for _, p := range pods {
		o.s.Pods = append(o.s.Pods, p.GetId())
	}
	for _, c := range ctrs {
		o.s.Containers = append(o.s.Containers, c.GetId())
	}
	o.mu.Unlock()
	if o.hold > 0 {
		time.Sleep(rand.N(o.hold))
	}
	o.mu.Lock()
	o.s.Synced = time.Now().UnixNano()
	o.mu.Unlock()
	close(o.synced)
	return nil, nil
}

func (o *observer) record(ev, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.s.Events = append(o.s.Events, syncwatch.Event{Type: ev, ID: id, At: time.Now().UnixNano()})
}

func (o *observer) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	o.record(syncwatch.RunPodSandbox, pod.GetId())
	return nil
}

func (o *observer) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	o.record(syncwatch.CreateContainer, ctr.GetId())
	return nil, nil, nil
}

func (o *observer) StartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	o.record(syncwatch.StartContainer, ctr.GetId())
	return nil
}
