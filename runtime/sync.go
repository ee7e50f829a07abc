package runtime

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nrinet/nrinet/api"
)

// syncChunks splits pods and containers into SynchronizeRequests whose
// encoding is at most limit bytes, computing sizes before anything is
// sent. Every chunk but the last has More set. One pod or container that
// does not fit in a chunk on its own is an error.
func syncChunks(pods []*api.PodSandbox, ctrs []*api.Container, limit int) ([]*api.SynchronizeRequest, error) {
	const moreSize = 2 // tag and value of More = true
	var (
		chunks []*api.SynchronizeRequest
		cur    = &api.SynchronizeRequest{}
		size   = moreSize
	)
	add := func(m api.VTMessage, what string, id string, appendTo func()) error {
		n := m.SizeVT()
		item := 1 + protowire.SizeVarint(uint64(n)) + n
		if item+moreSize > limit {
			return fmt.Errorf("%s %q encodes to %d bytes, more than the %d-byte Synchronize limit", what, id, item, limit)
		}
		if size+item > limit {
			cur.More = true
			chunks = append(chunks, cur)
			cur, size = &api.SynchronizeRequest{}, moreSize
		}
		appendTo()
		size += item
		return nil
	}
	for _, pod := range pods {
		if err := add(pod, "pod", pod.GetId(), func() { cur.Pods = append(cur.Pods, pod) }); err != nil {
			return nil, err
		}
	}
	for _, ctr := range ctrs {
		if err := add(ctr, "container", ctr.GetId(), func() { cur.Containers = append(cur.Containers, ctr) }); err != nil {
			return nil, err
		}
	}
	return append(chunks, cur), nil
}

// synchronize sends the runtime's current state to the plugin, in chunks,
// and hands the updates of its final answer to the update function. The
// caller holds the sync lock.
func (p *plugin) synchronize(ctx context.Context) error {
	r := p.r
	var (
		pods []*api.PodSandbox
		ctrs []*api.Container
	)
	if r.cfg.sync != nil {
		var err error
		if pods, ctrs, err = r.cfg.sync(ctx); err != nil {
			return fmt.Errorf("listing pods and containers for Synchronize: %w", err)
		}
	}
	chunks, err := syncChunks(pods, ctrs, r.cfg.syncChunkSize)
	if err != nil {
		return err
	}
	var updates []*api.ContainerUpdate
	for i, req := range chunks {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.requestTimeout)
		rsp, err := rpc[api.SynchronizeResponse](cctx, p, "Synchronize", req)
		cancel()
		if err != nil {
			return &PluginError{Plugin: p.fullName(), Method: "Synchronize", Err: fmt.Errorf("chunk %d of %d: %w", i+1, len(chunks), err)}
		}
		if req.More && (!rsp.GetMore() || len(rsp.GetUpdate()) > 0) {
			return fmt.Errorf("plugin %q: Synchronize: plugin does not handle split sync requests (chunk %d of %d answered more=%v with %d updates)",
				p.fullName(), i+1, len(chunks), rsp.GetMore(), len(rsp.GetUpdate()))
		}
		updates = rsp.GetUpdate()
	}
	p.logger().Debug("synchronized", "pods", len(pods), "containers", len(ctrs), "chunks", len(chunks), "updates", len(updates))
	if len(updates) == 0 {
		return nil
	}
	if r.cfg.update == nil {
		p.logger().Warn("ignoring container updates from Synchronize: the runtime accepts none", "updates", len(updates))
		return nil
	}
	failed, err := r.cfg.update(ctx, p.fullName(), updates, nil)
	if err != nil {
		return fmt.Errorf("applying Synchronize updates of plugin %q: %w", p.fullName(), err)
	}
	if len(failed) > 0 {
		p.logger().Warn("some Synchronize updates were not applied", "failed", len(failed))
	}
	return nil
}
