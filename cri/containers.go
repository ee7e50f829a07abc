package cri

import (
	"context"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nrinetd runs no containers. These RPCs give the honest answers for that
// (empty lists; stopping or removing a container that is not there
// succeeds), so that crictl and conformance clients work; every other
// container RPC is codes.Unimplemented.

// ListContainers lists no containers.
func (s *Server) ListContainers(context.Context, *criapi.ListContainersRequest) (*criapi.ListContainersResponse, error) {
	return &criapi.ListContainersResponse{Containers: []*criapi.Container{}}, nil
}

// StopContainer succeeds: there is no container to stop.
func (s *Server) StopContainer(context.Context, *criapi.StopContainerRequest) (*criapi.StopContainerResponse, error) {
	return &criapi.StopContainerResponse{}, nil
}

// RemoveContainer succeeds: there is no container to remove.
func (s *Server) RemoveContainer(context.Context, *criapi.RemoveContainerRequest) (*criapi.RemoveContainerResponse, error) {
	return &criapi.RemoveContainerResponse{}, nil
}

// ListContainerStats lists no container statistics.
func (s *Server) ListContainerStats(context.Context, *criapi.ListContainerStatsRequest) (*criapi.ListContainerStatsResponse, error) {
	return &criapi.ListContainerStatsResponse{Stats: []*criapi.ContainerStats{}}, nil
}

// ListPodSandboxStats lists no statistics: sandboxes without containers
// have no cgroups to measure.
func (s *Server) ListPodSandboxStats(context.Context, *criapi.ListPodSandboxStatsRequest) (*criapi.ListPodSandboxStatsResponse, error) {
	return &criapi.ListPodSandboxStatsResponse{Stats: []*criapi.PodSandboxStats{}}, nil
}
