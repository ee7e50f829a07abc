package plugin_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

// methodLog records the ttrpc methods an interceptor saw.
type methodLog struct {
	mu      sync.Mutex
	methods map[string]bool
}

func (l *methodLog) add(m string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.methods == nil {
		l.methods = map[string]bool{}
	}
	l.methods[m] = true
}

func (l *methodLog) has(m string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.methods[m]
}

// TestWithTTRPCOptions: interceptors given with WithTTRPCOptions see the
// stub's calls to the runtime and the runtime's calls to the plugin, and
// the stub still notices the end of the connection.
func TestWithTTRPCOptions(t *testing.T) {
	sock := socketPath(t)
	_, stopRuntime := startRuntime(t, sock)
	var client, server methodLog
	clientOpts := []ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(
		func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, call ttrpc.Invoker) error {
			client.add(info.FullMethod)
			return call(ctx, req, rsp)
		})}
	serverOpts := []ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(
		func(ctx context.Context, u ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (interface{}, error) {
			server.add(info.FullMethod)
			return m(ctx, u)
		})}
	closed := make(chan error, 1)
	s := newStub(t, podOnly{}, sock, plugin.WithTTRPCOptions(clientOpts, serverOpts),
		plugin.WithOnClose(func(err error) { closed <- err }))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := "/nri.pkg.api.v1alpha1.Runtime/RegisterPlugin"; !client.has(m) {
		t.Errorf("the client interceptor did not see %s", m)
	}
	if m := "/nri.pkg.api.v1alpha1.Plugin/Configure"; !server.has(m) {
		t.Errorf("the server interceptor did not see %s", m)
	}
	stopRuntime()
	receive(t, closed, "the on-close callback after the runtime stopped")
	if err := s.Wait(); err == nil {
		t.Error("Wait = nil, want why the connection ended")
	}
}

// failingConfigure handles RunPodSandbox and fails its configuration.
type failingConfigure struct{ podOnly }

func (failingConfigure) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return 0, errors.New("no configuration for this runtime")
}

// TestStart_ConfigureErrorOverLostRegistration: when the plugin's
// Configure fails, the runtime drops the connection, and the answer to
// RegisterPlugin may be lost with it; Start still reports the Configure
// error, not the closed connection. An interceptor loses the answer on
// purpose once Configure has failed.
func TestStart_ConfigureErrorOverLostRegistration(t *testing.T) {
	sock := socketPath(t)
	startRuntime(t, sock)
	configureFailed := make(chan struct{})
	serverOpts := []ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(
		func(ctx context.Context, u ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (interface{}, error) {
			rsp, err := m(ctx, u)
			if err != nil && strings.HasSuffix(info.FullMethod, "/Configure") {
				close(configureFailed)
			}
			return rsp, err
		})}
	clientOpts := []ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(
		func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, call ttrpc.Invoker) error {
			err := call(ctx, req, rsp)
			if strings.HasSuffix(info.FullMethod, "/RegisterPlugin") {
				<-configureFailed
				return ttrpc.ErrClosed
			}
			return err
		})}
	s := newStub(t, failingConfigure{}, sock, plugin.WithTTRPCOptions(clientOpts, serverOpts))
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no configuration for this runtime") {
		t.Fatalf("Start = %v, want the Configure error", err)
	}
}
