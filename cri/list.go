package cri

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListPodSandbox lists the visible sandboxes, newest first, filtered by
// ID (the whole ID or a unique prefix), state and labels (all must
// match). A sandbox whose RunPodSandbox hook is still running is never
// listed.
func (s *Server) ListPodSandbox(ctx context.Context, req *criapi.ListPodSandboxRequest) (*criapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	if f.GetId() != "" {
		id, err := s.store.resolve(f.GetId())
		if err != nil {
			// Unknown or ambiguous: nothing matches, as in containerd.
			return &criapi.ListPodSandboxResponse{Items: []*criapi.PodSandbox{}}, nil
		}
		f = proto.CloneOf(f)
		f.Id = id
	}
	sbs, err := s.store.list()
	if err != nil {
		return nil, toStatus(fmt.Errorf("ListPodSandbox: %w", err))
	}
	items := []*criapi.PodSandbox{}
	for _, sb := range sbs {
		if sb.matches(f) {
			items = append(items, sb.listItem())
		}
	}
	slices.SortFunc(items, func(a, b *criapi.PodSandbox) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(a.Id, b.Id))
	})
	return &criapi.ListPodSandboxResponse{Items: items}, nil
}
