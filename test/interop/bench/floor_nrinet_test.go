//go:build !upstream

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/mux"
)

// BenchmarkFloor is the transport every NRI implementation's hook call
// goes through, with nothing of NRI around it: one ttrpc call of the
// Plugin service's RunPodSandbox, the request of BenchmarkRunPodSandbox
// encoded and decoded with nrinet's codec (api.Fast), over a unix socket,
// and over the same socket through the multiplexer on both ends, as NRI
// runs ttrpc. The server's method decodes the request and answers an empty
// response, in this process or in a process of its own (this binary run
// again). It is the lower bound of BenchmarkRunPodSandbox/plugins=1 with
// the same ttrpc, measured in the same run: what neither nrinet nor
// upstream can go below without changing ttrpc (docs/performance.md).
func BenchmarkFloor(b *testing.B) {
	for _, tc := range []struct {
		name           string
		mux, separated bool
	}{
		{"ttrpc/inproc", false, false},
		{"ttrpc+mux/inproc", true, false},
		{"ttrpc/process", false, true},
		{"ttrpc+mux/process", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sock := filepath.Join(b.TempDir(), "floor.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			served := make(chan error, 1)
			if tc.separated {
				startFloorProcess(b, l, tc.mux)
				served <- nil
			} else {
				go func() { served <- serveFloor(l, tc.mux) }()
			}
			defer func() {
				l.Close()
				if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, mux.ErrClosed) {
					b.Errorf("floor server: %v", err)
				}
			}()
			conn, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			client, err := floorClient(conn, tc.mux)
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			req := &api.RunPodSandboxRequest{Pod: testPod()}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := api.Call(ctx, client, api.PluginServiceName, "RunPodSandbox", req, &api.RunPodSandboxResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// floorClient is the runtime's end: a ttrpc client on conn, or on the
// multiplexer's Plugin service connection over conn.
func floorClient(conn net.Conn, withMux bool) (*ttrpc.Client, error) {
	if !withMux {
		return ttrpc.NewClient(conn), nil
	}
	m, err := mux.New(conn)
	if err != nil {
		return nil, err
	}
	pc, err := m.Open(mux.PluginServiceConn)
	if err != nil {
		return nil, err
	}
	m.Start()
	return ttrpc.NewClient(pc, ttrpc.WithOnClose(func() { m.Close() })), nil
}

// serveFloor is the plugin's end: a ttrpc server of RunPodSandbox alone,
// serving l's connections, or the multiplexer's Plugin service connection
// over l's first connection, until l (or that connection) is closed.
func serveFloor(l net.Listener, withMux bool) error {
	server, err := ttrpc.NewServer()
	if err != nil {
		return err
	}
	defer server.Close()
	server.RegisterService(api.PluginServiceName, &ttrpc.ServiceDesc{Methods: map[string]ttrpc.Method{
		"RunPodSandbox": api.Method(func(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
			return &api.RunPodSandboxResponse{}, nil
		}),
	}})
	if withMux {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		m, err := mux.New(conn)
		if err != nil {
			return err
		}
		defer m.Close()
		if l, err = m.Listen(mux.PluginServiceConn); err != nil {
			return err
		}
		m.Start()
	}
	return server.Serve(context.Background(), l)
}

// startFloorProcess runs this binary as the floor's server on l (passed
// as file descriptor 3), and ends it with the benchmark.
func startFloorProcess(b *testing.B, l net.Listener, withMux bool) {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	f, err := l.(*net.UnixListener).File()
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCH_FLOOR=1", fmt.Sprintf("BENCH_FLOOR_MUX=%t", withMux))
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// init turns the benchmark binary into the floor's server when
// BENCH_FLOOR is set (startFloorProcess); the floor exists in the nrinet
// build only, whose TestMain is shared with the upstream build.
func init() {
	if os.Getenv("BENCH_FLOOR") == "" {
		return
	}
	l, err := net.FileListener(os.NewFile(3, "floor listener"))
	if err == nil {
		err = serveFloor(l, os.Getenv("BENCH_FLOOR_MUX") == "true")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
