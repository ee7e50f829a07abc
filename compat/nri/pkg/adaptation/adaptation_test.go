package adaptation_test

// nrinet's own tests of the adapter. Upstream's tests of the package run
// with make upstream-suite (hack/upstream-suite.sh); the names here are
// prefixed so that they never collide with those.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/log"
)

// nrinetNoSync synchronizes plugins with a runtime that has no pods.
func nrinetNoSync(ctx context.Context, cb nri.SyncCB) error {
	_, err := cb(ctx, nil, nil)
	return err
}

func nrinetNoUpdate(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) {
	return nil, nil
}

// nrinetLogs collects what is logged through pkg/log, for one test.
type nrinetLogs struct {
	mu    sync.Mutex
	lines []string
}

func captureLogs(t *testing.T) *nrinetLogs {
	l := &nrinetLogs{}
	prev := log.Get()
	log.Set(l)
	t.Cleanup(func() { log.Set(prev) })
	return l
}

func (l *nrinetLogs) add(level, format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, args...))
}

func (l *nrinetLogs) Debugf(_ context.Context, f string, a ...interface{}) { l.add("debug", f, a...) }
func (l *nrinetLogs) Infof(_ context.Context, f string, a ...interface{})  { l.add("info", f, a...) }
func (l *nrinetLogs) Warnf(_ context.Context, f string, a ...interface{})  { l.add("warn", f, a...) }
func (l *nrinetLogs) Errorf(_ context.Context, f string, a ...interface{}) { l.add("error", f, a...) }

// has reports whether a line of level contains every part.
func (l *nrinetLogs) has(level string, parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.HasPrefix(line, level+" ") && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return true
		}
	}
	return false
}

func TestNrinet_NewRefusesMissingFunctions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sync   nri.SyncFn
		update nri.UpdateFn
		want   string
	}{
		{"no SyncFn", nil, nrinetNoUpdate, "nil SyncFn"},
		{"no UpdateFn", nrinetNoSync, nil, "nil UpdateFn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := nri.New("runtime", "v1", tc.sync, tc.update)
			if r != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error saying %q", r, err, tc.want)
			}
		})
	}
}

func TestNrinet_RequestBeforeStartNamesTheRequest(t *testing.T) {
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithDisabledExternalConnections())
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.CreateContainer(context.Background(), &api.CreateContainerRequest{})
	if err == nil || !strings.Contains(err.Error(), "CreateContainer") || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("CreateContainer before Start = %v, want an error naming the request", err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if err := r.Start(); err == nil {
		t.Fatal("a second Start succeeded")
	}
}

// TestNrinet_WasmPluginIsReportedAndSkipped: nrinet runs no WASM plugins;
// one in the plugin directory is logged as an error naming it, and the
// runtime starts without it.
func TestNrinet_WasmPluginIsReportedAndSkipped(t *testing.T) {
	logs := captureLogs(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "10-filter.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate,
		nri.WithPluginPath(dir), nri.WithPluginConfigPath(t.TempDir()), nri.WithDisabledExternalConnections())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if !logs.has("error", "WASM plugins are not supported", "10-filter.wasm") {
		t.Errorf("no error log naming the WASM plugin:\n%s", strings.Join(logs.lines, "\n"))
	}
	if err := r.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: &api.PodSandbox{Id: "pod0"}}); err != nil {
		t.Fatalf("RunPodSandbox without plugins: %v", err)
	}
}

// nrinetMetrics records plugin invocations.
type nrinetMetrics struct {
	mu    sync.Mutex
	calls []string
	count int
}

func (m *nrinetMetrics) RecordPluginInvocation(p, op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf("%s %s %v", p, op, err))
}
func (m *nrinetMetrics) RecordPluginLatency(string, string, time.Duration) {}
func (m *nrinetMetrics) RecordPluginAdjustments(string, string, *nri.ContainerAdjustment, int, int) {
}
func (m *nrinetMetrics) UpdatePluginCount(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count = n
}

// TestNrinet_BuiltinPluginAdjustsAndEvicts: a built-in plugin takes part
// in CreateContainer; its adjustment and the eviction it asks for come back
// in the response, and the metrics see the call.
func TestNrinet_BuiltinPluginAdjustsAndEvicts(t *testing.T) {
	m := &nrinetMetrics{}
	p := &builtin.BuiltinPlugin{Base: "policy", Index: "10", Handlers: builtin.BuiltinHandlers{
		CreateContainer: func(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
			a := &api.ContainerAdjustment{}
			a.AddEnv("POLICY", "strict")
			return &api.CreateContainerResponse{
				Adjust: a,
				Evict:  []*api.ContainerEviction{{ContainerId: "ctr-old", Reason: "make room for " + req.GetContainer().GetId()}},
			}, nil
		},
	}}
	r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate,
		nri.WithDisabledExternalConnections(), nri.WithBuiltinPlugins(p), nri.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	pod := &api.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default", Uid: "uid0"}
	rsp, err := r.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"}})
	if err != nil {
		t.Fatal(err)
	}
	if env := rsp.GetAdjust().GetEnv(); len(env) != 1 || env[0].GetKey() != "POLICY" || env[0].GetValue() != "strict" {
		t.Errorf("adjusted env = %v, want POLICY=strict", env)
	}
	if ev := rsp.GetEvict(); len(ev) != 1 || ev[0].GetContainerId() != "ctr-old" || ev[0].GetReason() != "make room for ctr0" {
		t.Errorf("evictions = %v, want ctr-old", ev)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.calls, "10-policy CreateContainer <nil>") || m.count != 1 {
		t.Errorf("metrics saw calls %q and %d plugins, want 10-policy's CreateContainer and 1", m.calls, m.count)
	}
}

// The runtime side of NRI in a container runtime: created with the
// runtime's synchronization and update functions, started, then told of
// each pod and container.
func ExampleNew() {
	logAdjustment := &builtin.BuiltinPlugin{Base: "env", Index: "10", Handlers: builtin.BuiltinHandlers{
		CreateContainer: func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
			a := &api.ContainerAdjustment{}
			a.AddEnv("FROM_NRI", "1")
			return &api.CreateContainerResponse{Adjust: a}, nil
		},
	}}
	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		// List the runtime's pods and containers under its lock here.
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }

	r, err := nri.New("example-runtime", "v1.0.0", syncFn, updateFn,
		nri.WithDisabledExternalConnections(), nri.WithBuiltinPlugins(logAdjustment))
	if err != nil {
		panic(err)
	}
	if err := r.Start(); err != nil {
		panic(err)
	}
	defer r.Stop()

	pod := &api.PodSandbox{Id: "pod0", Name: "web", Namespace: "default", Uid: "uid0"}
	if err := r.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		panic(err)
	}
	rsp, err := r.CreateContainer(context.Background(), &api.CreateContainerRequest{
		Pod:       pod,
		Container: &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "app"},
	})
	if err != nil {
		panic(err)
	}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		fmt.Printf("%s=%s\n", kv.GetKey(), kv.GetValue())
	}
	// Output: FROM_NRI=1
}

// TestNrinet_SocketPathAtStart: what Start does with what is at the socket
// path. An empty directory is removed, as upstream's os.Remove does (CRI-O's
// server tests give a fresh temporary directory); a directory that holds
// something and a regular file are refused by name and left as they are
// (upstream would remove the file), where upstream's Remove also fails for
// the directory.
func TestNrinet_SocketPathAtStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr string
	}{
		{name: "nothing", prepare: func(*testing.T, string) {}},
		{name: "empty directory", prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory with a file", wantErr: "not a socket", prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(path, "keep"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "regular file", wantErr: "not a socket", prepare: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nri.sock")
			tc.prepare(t, path)
			before, _ := os.Lstat(path)
			r, err := nri.New("runtime", "v1", nrinetNoSync, nrinetNoUpdate, nri.WithSocketPath(path),
				nri.WithPluginPath(t.TempDir()), nri.WithPluginConfigPath(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			err = r.Start()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				t.Cleanup(r.Stop)
				if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
					t.Fatalf("after Start, %s is %v (%v), want a socket", path, fi, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
				r.Stop()
				t.Fatalf("Start = %v, want an error naming %s and saying %q", err, path, tc.wantErr)
			}
			if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s changed: %v (%v), was %v", path, after, err, before)
			}
		})
	}
}
