//go:build upstream

package main

import (
	"context"
	"strings"
	"sync"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
)

type (
	PodSandbox              = api.PodSandbox
	Container               = api.Container
	ContainerAdjustment     = api.ContainerAdjustment
	ContainerUpdate         = api.ContainerUpdate
	ContainerEviction       = api.ContainerEviction
	KeyValue                = api.KeyValue
	LinuxResources          = api.LinuxResources
	EventMask               = api.EventMask
	CreateContainerResponse = api.CreateContainerResponse
	UpdateContainerResponse = api.UpdateContainerResponse
	UpdateContainersRequest = api.UpdateContainersRequest
)

var theStub stub.Stub

// The upstream stub's handlers cannot return evictions, and its
// UpdateContainers cannot send any: the plugin adds the scripted ones to
// the messages on their way, with ttrpc interceptors.

// evictHolder carries a handler's evictions to the server interceptor.
type evictHolder struct{ list []*ContainerEviction }

type evictKey struct{}

func stash(ctx context.Context, list []*ContainerEviction) {
	if h, ok := ctx.Value(evictKey{}).(*evictHolder); ok {
		h.list = list
	}
}

// addEvictions is a ttrpc server interceptor that puts the evictions a
// handler stashed into its CreateContainer or UpdateContainer response.
func addEvictions(ctx context.Context, unmarshal ttrpc.Unmarshaler, _ *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	h := &evictHolder{}
	rsp, err := method(context.WithValue(ctx, evictKey{}, h), unmarshal)
	switch r := rsp.(type) {
	case *api.CreateContainerResponse:
		r.Evict = h.list
	case *api.UpdateContainerResponse:
		r.Evict = h.list
	}
	return rsp, err
}

// unsolicited holds the evictions the next UpdateContainers call sends.
var unsolicited struct {
	sync.Mutex
	evict []*ContainerEviction
}

// sendEvictions is a ttrpc client interceptor that adds the pending
// evictions to an encoded UpdateContainersRequest.
func sendEvictions(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, invoke ttrpc.Invoker) error {
	if strings.HasSuffix(info.FullMethod, "/UpdateContainers") && len(unsolicited.evict) > 0 {
		msg := &api.UpdateContainersRequest{}
		if err := proto.Unmarshal(req.Payload, msg); err != nil {
			return err
		}
		msg.Evict = unsolicited.evict
		b, err := proto.Marshal(msg)
		if err != nil {
			return err
		}
		req.Payload = b
	}
	return invoke(ctx, req, rsp)
}

func (r *recorder) CreateContainer(ctx context.Context, p *PodSandbox, c *Container) (*ContainerAdjustment, []*ContainerUpdate, error) {
	adj, ups, evict, err := r.createContainer(p, c)
	stash(ctx, evict)
	return adj, ups, err
}

func (r *recorder) UpdateContainer(ctx context.Context, p *PodSandbox, c *Container, res *LinuxResources) ([]*ContainerUpdate, error) {
	ups, evict, err := r.updateContainer(p, c, res)
	stash(ctx, evict)
	return ups, err
}

// updateContainers asks the runtime for unsolicited updates and evictions.
func updateContainers(updates []*ContainerUpdate, evictions []*ContainerEviction) ([]*ContainerUpdate, error) {
	unsolicited.Lock()
	defer unsolicited.Unlock()
	unsolicited.evict = evictions
	defer func() { unsolicited.evict = nil }()
	return theStub.UpdateContainers(updates)
}

func timeouts() (reg, req int64) {
	return theStub.RegistrationTimeout().Milliseconds(), theStub.RequestTimeout().Milliseconds()
}

// run serves the runtime until the connection ends.
func run(rec *recorder, name, idx, socket string) error {
	opts := []stub.Option{stub.WithTTRPCOptions(
		[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(sendEvictions)},
		[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(addEvictions)},
	)}
	if name != "" {
		opts = append(opts, stub.WithPluginName(name))
	}
	if idx != "" {
		opts = append(opts, stub.WithPluginIdx(idx))
	}
	if socket != "" {
		opts = append(opts, stub.WithSocketPath(socket))
	}
	var err error
	if theStub, err = stub.New(rec, opts...); err != nil {
		return err
	}
	err = theStub.Run(context.Background())
	rec.write(record{Event: "Closed"})
	return err
}
