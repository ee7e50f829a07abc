package cni_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

// recordHandler is a slog.Handler that sends every record to a channel:
// the tests' hook into WaitForNetwork, which logs each time it starts
// waiting for another reason.
type recordHandler struct{ ch chan<- slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.ch <- r.Clone()
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// waitCall is a WaitForNetwork call running in its own goroutine, with
// its log records on a channel.
type waitCall struct {
	recs   chan slog.Record
	done   chan struct{}
	net    *cni.Network
	err    error
	cancel context.CancelFunc
}

// startWait calls WaitForNetwork(ctx, cfg) in a goroutine that the test
// waits for when it ends (ctx cancelled, records drained), with a 1 ms
// interval so that it tries again at once. Its records are buffered, so
// that one it should not have logged is seen by the next step.
func startWait(t *testing.T, ctx context.Context, cfg cni.Config) *waitCall {
	ctx, cancel := context.WithCancel(ctx)
	w := &waitCall{recs: make(chan slog.Record, 64), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(w.done)
		w.net, w.err = cni.WaitForNetwork(ctx, cfg,
			cni.WithWaitInterval(time.Millisecond), cni.WithWaitLogger(slog.New(recordHandler{w.recs})))
	}()
	t.Cleanup(func() {
		cancel()
		for {
			select {
			case <-w.recs:
			case <-w.done:
				return
			}
		}
	})
	return w
}

// next returns the next record, failing the test if the call returns
// first or none comes within 10 s.
func (w *waitCall) next(t *testing.T) slog.Record {
	t.Helper()
	select {
	case r := <-w.recs:
		return r
	case <-w.done:
		t.Fatalf("WaitForNetwork returned (%v, %v) before logging what the test expected", w.net, w.err)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForNetwork logged nothing for 10 s")
	}
	panic("unreachable")
}

// result waits for the call to return, failing the test if it logs
// anything more or does not return within 10 s.
func (w *waitCall) result(t *testing.T) (*cni.Network, error) {
	t.Helper()
	select {
	case r := <-w.recs:
		t.Fatalf("WaitForNetwork logged %q %v, want it to return", r.Message, attrs(r))
	case <-w.done:
		return w.net, w.err
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForNetwork did not return within 10 s")
	}
	panic("unreachable")
}

func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// writeFileAtomic writes a file under a temporary name and renames it,
// so that WaitForNetwork, trying again meanwhile, never reads it half
// written.
func writeFileAtomic(t *testing.T, dir, name, content string, perm os.FileMode) string {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWaitForNetwork: WaitForNetwork returns the network once it loads,
// logging why it waits (naming the directory, the network and the
// reason) each time the reason changes, and what it found; it returns
// at once for an invalid configuration and when its context ends.
func TestWaitForNetwork(t *testing.T) {
	const (
		waiting = "waiting for a CNI network configuration"
		found   = "found the CNI network configuration"
	)
	// step is a record that WaitForNetwork must log next, and what the
	// test does once it has: {dir}, {file} and {bin} in want are
	// replaced by the configuration directory, the conflist's path and
	// the first binary directory.
	type step struct {
		msg    string
		want   map[string]string // attribute: substring of its value
		absent []string          // attributes the record must not have
		then   func(t *testing.T, cfg cni.Config, cancel context.CancelFunc)
	}
	writeListA := func(t *testing.T, cfg cni.Config, _ context.CancelFunc) {
		writeFileAtomic(t, cfg.ConfDir, "10-a.conflist", listA, 0o644)
	}
	var attempts func() int // set by a case's setup
	foundA := step{msg: found, want: map[string]string{"dir": "{dir}", "network": "net-a", "file": "{file}"}}
	for _, tc := range []struct {
		name      string
		network   string
		setup     func(t *testing.T, cfg *cni.Config, cancel context.CancelFunc)
		steps     []step
		wantErr   error // nil: the network net-a from {dir}/10-a.conflist
		wantNoNet bool
	}{
		{name: "there already",
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
			}},
		{name: "no dir, then a conflist",
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				cfg.ConfDir = filepath.Join(cfg.ConfDir, "net.d")
			},
			steps: []step{
				{msg: waiting, want: map[string]string{"dir": "{dir}", "reason": "no *.conflist, *.conf, *.json file in {dir}"}, absent: []string{"network"},
					then: func(t *testing.T, cfg cni.Config, _ context.CancelFunc) {
						if err := os.Mkdir(cfg.ConfDir, 0o755); err != nil {
							t.Fatal(err)
						}
						writeFileAtomic(t, cfg.ConfDir, "10-a.conflist", listA, 0o644)
					}},
				foundA,
			}},
		{name: "empty dir, then a conflist",
			steps: []step{
				{msg: waiting, want: map[string]string{"dir": "{dir}", "reason": "no *.conflist, *.conf, *.json file in {dir}"}, then: writeListA},
				foundA,
			}},
		{name: "empty dir, then an invalid conflist, then a valid one",
			steps: []step{
				{msg: waiting, want: map[string]string{"reason": "no *.conflist"},
					then: func(t *testing.T, cfg cni.Config, _ context.CancelFunc) {
						writeFileAtomic(t, cfg.ConfDir, "10-a.conflist", `{"name": "net-a", "plugins": [`, 0o644)
					}},
				{msg: waiting, want: map[string]string{"dir": "{dir}", "reason": "invalid CNI network configuration {file}"}, then: writeListA},
				foundA,
			}},
		{name: "named network, defined later", network: "net-a",
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				testutil.WriteFile(t, cfg.ConfDir, "20-b.conf", confB)
			},
			steps: []step{
				{msg: waiting, want: map[string]string{"dir": "{dir}", "network": "net-a", "reason": `no file in {dir} defines network "net-a"`}, then: writeListA},
				foundA,
			}},
		{name: "plugin installed later",
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", strings.Replace(listA, `"loopback"`, `"later"`, 1))
			},
			steps: []step{
				{msg: waiting, want: map[string]string{"reason": `plugin type "later", which has no executable in {bin}`},
					then: func(t *testing.T, cfg cni.Config, _ context.CancelFunc) {
						writeFileAtomic(t, cfg.BinDirs[0], "later", fakePluginScript, 0o755)
					}},
				foundA,
			}},
		{name: "same reason, logged once",
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				// bridge, found first, counts the attempts.
				counter := filepath.Join(t.TempDir(), "attempts")
				writeFileAtomic(t, cfg.BinDirs[0], "bridge", "#!/bin/sh\necho >>"+counter+"\n"+strings.TrimPrefix(fakePluginScript, "#!/bin/sh\n"), 0o755)
				testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", strings.Replace(listA, `"loopback"`, `"later"`, 1))
				attempts = func() int {
					b, _ := os.ReadFile(counter)
					return len(b)
				}
			},
			steps: []step{
				{msg: waiting, want: map[string]string{"reason": `plugin type "later"`},
					then: func(t *testing.T, cfg cni.Config, _ context.CancelFunc) {
						n := attempts()
						testutil.WaitFor(t, "two more attempts", 10*time.Second, func() bool { return attempts() >= n+2 })
						writeFileAtomic(t, cfg.BinDirs[0], "later", fakePluginScript, 0o755)
					}},
				foundA,
			}},
		{name: "invalid configuration", wantErr: cni.ErrInvalidConfig,
			setup: func(t *testing.T, cfg *cni.Config, _ context.CancelFunc) {
				testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
				cfg.ConfDir = "net.d"
			}},
		{name: "context cancelled while waiting", wantErr: context.Canceled,
			steps: []step{{msg: waiting, want: map[string]string{"reason": "no *.conflist"},
				then: func(t *testing.T, _ cni.Config, cancel context.CancelFunc) { cancel() }}}},
		{name: "context cancelled before", wantErr: context.Canceled,
			setup: func(t *testing.T, cfg *cni.Config, cancel context.CancelFunc) {
				testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
				cancel()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := loaderEnv(t)
			cfg.Network = tc.network
			if tc.setup != nil {
				tc.setup(t, &cfg, cancel)
			}
			r := strings.NewReplacer("{dir}", cfg.ConfDir, "{file}", filepath.Join(cfg.ConfDir, "10-a.conflist"), "{bin}", cfg.BinDirs[0])
			w := startWait(t, ctx, cfg)
			for i, s := range tc.steps {
				rec := w.next(t)
				got := attrs(rec)
				if rec.Message != s.msg {
					t.Fatalf("record %d: %q %v, want %q", i, rec.Message, got, s.msg)
				}
				if rec.Level != slog.LevelInfo {
					t.Errorf("record %d: level %v, want INFO", i, rec.Level)
				}
				for k, v := range s.want {
					if v = r.Replace(v); !strings.Contains(got[k], v) {
						t.Errorf("record %d %q: %s = %q, want it to contain %q", i, rec.Message, k, got[k], v)
					}
				}
				for _, k := range s.absent {
					if _, ok := got[k]; ok {
						t.Errorf("record %d %q has %s = %q", i, rec.Message, k, got[k])
					}
				}
				if s.then != nil {
					s.then(t, cfg, cancel)
				}
			}
			n, err := w.result(t)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || n != nil {
					t.Fatalf("WaitForNetwork = %v, %v; want nil, %v", n, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := r.Replace("{file}"); n.List.Name != "net-a" || n.File != want {
				t.Errorf("WaitForNetwork found network %q in %s, want net-a in %s", n.List.Name, n.File, want)
			}
		})
	}
}

func TestWaitForNetwork_BadOptions(t *testing.T) {
	cfg := loaderEnv(t)
	testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
	for _, tc := range []struct {
		name string
		opt  cni.WaitOption
		want string
	}{
		{"zero interval", cni.WithWaitInterval(0), "WithWaitInterval: interval 0s is not positive"},
		{"negative interval", cni.WithWaitInterval(-time.Second), "interval -1s is not positive"},
		{"nil logger", cni.WithWaitLogger(nil), "WithWaitLogger: nil logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := cni.WaitForNetwork(context.Background(), cfg, tc.opt)
			if n != nil {
				t.Errorf("network %q returned with a bad option", n.List.Name)
			}
			mustContain(t, err, tc.want)
		})
	}
}

func TestIsNetworkLoadError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", cni.ErrNoNetworkConfig), true},
		{fmt.Errorf("x: %w", cni.ErrNetworkNotFound), true},
		{fmt.Errorf("x: %w", cni.ErrInvalidNetworkConfig), true},
		{fmt.Errorf("x: %w", cni.ErrPluginNotFound), true},
		{fmt.Errorf("x: %w", cni.ErrInvalidConfig), false},
		{cni.ErrNotConfigured, false},
		{context.Canceled, false},
		{nil, false},
	} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			if got := cni.IsNetworkLoadError(tc.err); got != tc.want {
				t.Errorf("IsNetworkLoadError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// ExampleWaitForNetwork waits for the installer of a CNI network to
// write its configuration, then runs the plugin with that network.
func ExampleWaitForNetwork() {
	ctx := context.Background()
	logger := slog.Default()
	cfg := cni.DefaultConfig()
	if _, err := cni.WaitForNetwork(ctx, cfg, cni.WithWaitLogger(logger)); err != nil {
		logger.Error("no CNI network", "error", err)
		return
	}
	h, err := cni.New(ctx, cni.WithConfig(cfg), cni.WithLogger(logger))
	if err != nil {
		logger.Error("loading the CNI network", "error", err)
		return
	}
	_ = h // pass it to plugin.New, then Run the stub
}
