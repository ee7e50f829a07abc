package runtime_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/mux"
)

// rawPlugin speaks the protocol by hand so a test can send what the plugin
// library never would. Only Configure is served.
type rawPlugin struct {
	api.PluginService // nil: other calls would panic, and are never made
	events            int32
}

func (p *rawPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: p.events}, nil
}

func (p *rawPlugin) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}

func (p *rawPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// connectRaw sets up mux and ttrpc on conn and returns a Runtime client.
func connectRaw(t *testing.T, conn net.Conn, svc api.PluginService) (api.RuntimeService, *mux.Mux) {
	t.Helper()
	m, err := mux.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.Listen(mux.PluginServiceConn)
	rc, _ := m.Open(mux.RuntimeServiceConn)
	srv, _ := ttrpc.NewServer()
	api.RegisterPluginService(srv, svc)
	go srv.Serve(context.Background(), l)
	client := ttrpc.NewClient(rc)
	m.Start()
	t.Cleanup(func() { client.Close(); srv.Close(); m.Close() })
	return api.NewRuntimeClient(client), m
}

// expectClosed waits until the runtime closes the raw connection.
func expectClosed(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runtime did not close the connection")
	}
}

func TestRuntime_BadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		send    func(t *testing.T, conn net.Conn) <-chan struct{}
		wantLog string
	}{
		{
			name: "garbage bytes",
			send: func(t *testing.T, conn net.Conn) <-chan struct{} {
				conn.Write([]byte("this is not an NRI frame at all\r\n\r\n"))
				return readUntilClosed(conn)
			},
			wantLog: "unregistered external plugin (pid",
		},
		{
			name: "oversized frame length",
			send: func(t *testing.T, conn net.Conn) <-chan struct{} {
				hdr := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 2}, 0xfffffff0)
				conn.Write(hdr)
				return readUntilClosed(conn)
			},
			wantLog: "announces 4294967280 payload bytes, limit is 4194314",
		},
		{
			name: "invalid name",
			send: func(t *testing.T, conn net.Conn) <-chan struct{} {
				rt, m := connectRaw(t, conn, &rawPlugin{events: 1})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "bad name!", PluginIdx: "10"}); err == nil {
					t.Error("registration with a bad name succeeded")
				}
				return m.Done()
			},
			wantLog: `registration refused for unregistered external plugin (pid`,
		},
		{
			name: "invalid index",
			send: func(t *testing.T, conn net.Conn) <-chan struct{} {
				rt, m := connectRaw(t, conn, &rawPlugin{events: 1})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "ok", PluginIdx: "100"}); err == nil {
					t.Error("registration with a bad index succeeded")
				}
				return m.Done()
			},
			wantLog: `invalid plugin index \"100\"`,
		},
		{
			name: "invalid event mask",
			send: func(t *testing.T, conn net.Conn) <-chan struct{} {
				rt, m := connectRaw(t, conn, &rawPlugin{events: 1 << 20})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				// The runtime may refuse the mask and close the connection
				// before its reply to RegisterPlugin is on the wire.
				if _, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "greedy", PluginIdx: "10"}); err != nil && !errors.Is(err, ttrpc.ErrClosed) {
					t.Fatal(err)
				}
				return m.Done()
			},
			wantLog: `plugin=10-greedy`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withShortTimeouts()...)
			rec := newRecorder()
			e.startPlugin(rec, "50", "bystander")
			expectClosed(t, tc.send(t, e.dial()))
			waitFor(t, "log line "+tc.wantLog+" in:\n"+e.logs.String(), func() bool { return contains(e.logs.String(), tc.wantLog) })
			if tc.name == "invalid event mask" && !contains(e.logs.String(), "invalid") {
				t.Errorf("log does not say the mask is invalid:\n%s", e.logs)
			}
			// The runtime and the other plugin keep working.
			if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)}); err != nil {
				t.Fatal(err)
			}
			if got := rec.seen(); len(got) != 1 {
				t.Fatalf("bystander saw %v", got)
			}
			e.startPlugin(newRecorder(), "60", "newcomer")
		})
	}
}

// readUntilClosed drains conn and reports when the peer closed it.
func readUntilClosed(conn net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	return done
}

func TestRuntime_ConcurrentRegistration(t *testing.T) {
	e := newEnv(t, withShortTimeouts()...)
	rt, _ := connectRaw(t, e.dial(), &rawPlugin{events: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "twice", PluginIdx: "10"})
			errs <- err
		}()
	}
	ok := 0
	for range 8 {
		if err := <-errs; err == nil {
			ok++
		} else if !contains(err.Error(), "already registered") {
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d registrations succeeded, want 1", ok)
	}
	e.startPlugin(newRecorder(), "20", "other") // the runtime is fine
}
