package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nrinet/nrinet/api"
)

// Field numbers of SynchronizeRequest, for encoding chunks directly.
const (
	syncPodsField       protowire.Number = 1
	syncContainersField protowire.Number = 2
	syncMoreField       protowire.Number = 3
)

// syncItem is one pod or container of the state and its encoded size.
type syncItem struct {
	msg  api.VTMessage
	size int // encoded size of msg, without tag and length
}

// syncChunk is one SynchronizeRequest: items of field 1 (pods) and 2
// (containers), and its encoded size.
type syncChunk struct {
	pods, ctrs []syncItem
	more       bool
	size       int
}

// planSync splits pods and containers into chunks whose encoding is at
// most limit bytes, computing sizes before anything is encoded or sent. An
// item larger than limit travels alone in a chunk of its own, up to
// MaxSyncChunkSize; one larger still (which a runtime that checks sizes at
// its door never accepts, but its SyncFunc may list) is sent without its
// labels, annotations and other free-form metadata, so that the plugin
// still learns that it exists: trimmed lists their IDs. Only an item that
// does not fit even then is an error.
func planSync(pods []*api.PodSandbox, ctrs []*api.Container, limit int) (chunks []*syncChunk, trimmed []string, err error) {
	const moreSize = 2 // tag and value of more = true
	cur := &syncChunk{size: moreSize}
	add := func(m api.VTMessage, field protowire.Number, what, id string) error {
		n := m.SizeVT()
		item := protowire.SizeTag(field) + protowire.SizeBytes(n)
		if item+moreSize > MaxSyncChunkSize {
			m = trimForSync(m)
			n = m.SizeVT()
			item = protowire.SizeTag(field) + protowire.SizeBytes(n)
			if item+moreSize > MaxSyncChunkSize {
				return fmt.Errorf("%s %q encodes to %d bytes even without its metadata, more than the %d-byte Synchronize limit", what, id, item, MaxSyncChunkSize)
			}
			trimmed = append(trimmed, what+" "+id)
		}
		if cur.size+item > limit && (len(cur.pods) > 0 || len(cur.ctrs) > 0) {
			cur.more = true
			chunks = append(chunks, cur)
			cur = &syncChunk{size: moreSize}
		}
		if field == syncPodsField {
			cur.pods = append(cur.pods, syncItem{m, n})
		} else {
			cur.ctrs = append(cur.ctrs, syncItem{m, n})
		}
		cur.size += item
		return nil
	}
	for _, pod := range pods {
		if err := add(pod, syncPodsField, "pod", pod.GetId()); err != nil {
			return nil, nil, err
		}
	}
	for _, ctr := range ctrs {
		if err := add(ctr, syncContainersField, "container", ctr.GetId()); err != nil {
			return nil, nil, err
		}
	}
	return append(chunks, cur), trimmed, nil
}

// trimForSync returns a copy of a pod or container without the free-form
// metadata that can make it large: what identifies it, its state, its
// namespaces and its addresses stay.
func trimForSync(m api.VTMessage) api.VTMessage {
	switch m := m.(type) {
	case *api.PodSandbox:
		return &api.PodSandbox{
			Id: m.GetId(), Name: m.GetName(), Uid: m.GetUid(), Namespace: m.GetNamespace(),
			RuntimeHandler: m.GetRuntimeHandler(), Pid: m.GetPid(), Ips: m.GetIps(),
			Linux: &api.LinuxPodSandbox{Namespaces: m.GetLinux().GetNamespaces(), CgroupParent: m.GetLinux().GetCgroupParent(), CgroupsPath: m.GetLinux().GetCgroupsPath()},
		}
	case *api.Container:
		return &api.Container{
			Id: m.GetId(), PodSandboxId: m.GetPodSandboxId(), Name: m.GetName(), State: m.GetState(),
			Pid: m.GetPid(), CreatedAt: m.GetCreatedAt(), StartedAt: m.GetStartedAt(), FinishedAt: m.GetFinishedAt(),
			ExitCode: m.GetExitCode(), StatusReason: m.GetStatusReason(), StatusMessage: m.GetStatusMessage(),
		}
	}
	return m
}

// encode returns the chunk's SynchronizeRequest encoding, marshaling each
// item once with the sizes planSync computed.
func (c *syncChunk) encode() ([]byte, error) {
	b := getSyncBuffer(c.size)
	for _, group := range []struct {
		field protowire.Number
		items []syncItem
	}{{syncPodsField, c.pods}, {syncContainersField, c.ctrs}} {
		for i, it := range group.items {
			if i%64 == 63 {
				// Encoding megabytes takes milliseconds of CPU: let
				// the requests that run meanwhile have it between items.
				goruntime.Gosched()
			}
			b = protowire.AppendTag(b, group.field, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(it.size))
			start := len(b)
			b = b[:start+it.size]
			if _, err := it.msg.MarshalToSizedBufferVT(b[start:]); err != nil {
				return nil, err
			}
		}
	}
	if c.more {
		b = protowire.AppendTag(b, syncMoreField, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, nil
}

// encodedChunk is a chunk's encoding or the error encoding it.
type encodedChunk struct {
	b   []byte
	err error
}

// synchronize sends pods and containers, the runtime's current state, to
// the plugin in chunks and returns the updates of its final answer. Chunk
// k+1 is encoded while the plugin works on chunk k; each chunk has the
// request timeout.
func (p *plugin) synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r := p.r
	chunks, trimmed, err := planSync(p.viewPods(pods), ctrs, r.cfg.syncChunkSize)
	if err != nil {
		return nil, err
	}
	if len(trimmed) > 0 {
		p.logger().Warn("sending items too large for Synchronize without their labels, annotations and other metadata",
			"items", trimmed, "limit", MaxSyncChunkSize)
	}
	encoded := make(chan encodedChunk, 1)
	stop := make(chan struct{})
	defer close(stop)
	if !r.track() {
		return nil, ErrClosed
	}
	go func() {
		defer r.wg.Done()
		defer close(encoded)
		for _, c := range chunks {
			b, err := c.encode()
			select {
			case encoded <- encodedChunk{b, err}:
			case <-stop:
				return
			}
		}
	}()

	var updates []*api.ContainerUpdate
	for i, c := range chunks {
		enc := <-encoded
		if enc.err != nil {
			return nil, fmt.Errorf("encoding Synchronize chunk %d of %d: %w", i+1, len(chunks), enc.err)
		}
		rsp := &api.SynchronizeResponse{}
		_, err := p.invoke(ctx, "Synchronize", r.cfg.requestTimeout, func(ctx context.Context, p *plugin) error {
			return p.client.Call(ctx, api.PluginServiceName, "Synchronize", api.Encoded(&api.SynchronizeRequest{}, enc.b), api.Fast(rsp))
		})
		putSyncBuffer(enc.b) // the call is over, even a late one
		if err != nil {
			return nil, &PluginError{Plugin: p.fullName(), Method: "Synchronize", Err: fmt.Errorf("chunk %d of %d: %w", i+1, len(chunks), err)}
		}
		if c.more && (!rsp.GetMore() || len(rsp.GetUpdate()) > 0) {
			return nil, fmt.Errorf("plugin %q: Synchronize: plugin does not handle split sync requests (chunk %d of %d answered more=%v with %d updates)",
				p.fullName(), i+1, len(chunks), rsp.GetMore(), len(rsp.GetUpdate()))
		}
		updates = rsp.GetUpdate()
	}
	p.logger().Debug("synchronized", "pods", len(pods), "containers", len(ctrs), "chunks", len(chunks), "updates", len(updates))
	return updates, nil
}

// applySyncUpdates hands the updates a plugin returned from Synchronize to
// the runtime's update function, after the sync lock is released (the
// function may itself make lifecycle requests).
func (p *plugin) applySyncUpdates(ctx context.Context, updates []*api.ContainerUpdate) {
	r := p.r
	if len(updates) == 0 {
		return
	}
	if r.cfg.update == nil {
		p.logger().Warn("ignoring container updates from Synchronize: the runtime accepts none", "updates", len(updates))
		return
	}
	failed, err := r.cfg.update(ctx, p.fullName(), updates)
	if err != nil {
		p.logger().Warn("applying Synchronize updates failed", "updates", len(updates), "error", err)
		return
	}
	if len(failed) > 0 {
		p.logger().Warn("some Synchronize updates were not applied", "failed", len(failed))
	}
}

// withAddresses fills in the addresses of pods that have none from the
// pod network records, so that Synchronize carries every pod's current
// addresses. The caller's pods are not modified.
func (r *Runtime) withAddresses(ctx context.Context, pods []*api.PodSandbox) []*api.PodSandbox {
	store := r.cfg.netStore
	if store == nil {
		return pods
	}
	out := pods
	cloned := false
	for i, pod := range pods {
		if len(pod.GetIps()) > 0 {
			continue
		}
		rec, err := store.PodNetwork(ctx, pod.GetId())
		if err != nil || len(rec.GetNetwork().GetIps()) == 0 {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(pods), true
		}
		withIPs := proto.CloneOf(pod)
		withIPs.Ips = slices.Clone(rec.GetNetwork().GetIps())
		out[i] = withIPs
	}
	return out
}

// syncBuffers recycles the buffers chunks are encoded into: a plugin
// joining a runtime of a thousand pods takes megabytes of them, which
// would otherwise be garbage the requests running meanwhile pay for.
var syncBuffers sync.Pool

// getSyncBuffer returns an empty buffer of capacity n or more.
func getSyncBuffer(n int) []byte {
	if b, ok := syncBuffers.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, max(n, DefaultSyncChunkSize))
}

// putSyncBuffer recycles b once nothing reads it any more.
func putSyncBuffer(b []byte) {
	if cap(b) <= 2*DefaultSyncChunkSize {
		syncBuffers.Put(&b)
	}
}
