package api_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/containerd/nri/pkg/api"
	nrinet "github.com/nrinet/nrinet/api"
)

// upstreamPlugin implements only upstream's Plugin service methods.
type upstreamPlugin struct{ api.PluginService }

func (upstreamPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.MustParseEventMask("RunPodSandbox"))}, nil
}

// extendedPlugin also implements nrinet's PodSandboxStatus.
type extendedPlugin struct{ upstreamPlugin }

func (extendedPlugin) PodSandboxStatus(context.Context, *nrinet.PodSandboxStatusRequest) (*nrinet.PodSandboxStatusResponse, error) {
	return &nrinet.PodSandboxStatusResponse{}, nil
}

// serve serves what register registers over a unix socket and returns a
// client connection to it.
func serve(t *testing.T, register func(*ttrpc.Server)) *ttrpc.Client {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "nri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	register(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), l) }()
	conn, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(conn)
	t.Cleanup(func() {
		client.Close()
		srv.Close()
		<-served
	})
	return client
}

// upstreamRuntime implements only upstream's Runtime service methods.
type upstreamRuntime struct{ api.RuntimeService }

func (upstreamRuntime) RegisterPlugin(context.Context, *api.RegisterPluginRequest) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func TestRegisterRuntimeService(t *testing.T) {
	conn := serve(t, func(srv *ttrpc.Server) { api.RegisterRuntimeService(srv, upstreamRuntime{}) })
	client := api.NewRuntimeClient(conn).(nrinet.RuntimeService)
	ctx := context.Background()
	if _, err := client.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "test", PluginIdx: "10"}); err != nil {
		t.Fatalf("RegisterPlugin: %v", err)
	}
	_, err := client.UpdatePodSandboxNetwork(ctx, &nrinet.UpdatePodSandboxNetworkRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("UpdatePodSandboxNetwork: %v, want code Unimplemented", err)
	}
}

func TestRegisterPluginService(t *testing.T) {
	for _, tc := range []struct {
		name   string
		svc    api.PluginService
		status codes.Code
	}{
		{"upstream methods only", upstreamPlugin{}, codes.Unimplemented},
		{"with the network extension", extendedPlugin{}, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := serve(t, func(srv *ttrpc.Server) { api.RegisterPluginService(srv, tc.svc) })
			client := api.NewPluginClient(conn).(nrinet.PluginService)
			ctx := context.Background()
			rpl, err := client.Configure(ctx, &api.ConfigureRequest{})
			if err != nil || rpl.GetEvents() != 1 {
				t.Fatalf("Configure = %v, %v", rpl, err)
			}
			_, err = client.PodSandboxStatus(ctx, &nrinet.PodSandboxStatusRequest{})
			if got := status.Code(err); got != tc.status {
				t.Fatalf("PodSandboxStatus: %v (code %v), want code %v", err, got, tc.status)
			}
		})
	}
}
