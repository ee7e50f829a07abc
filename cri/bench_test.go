package cri_test

import (
	"context"
	"testing"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkPodSandboxStatus measures a status served from the store, as
// the kubelet asks after every sandbox change (a host-network sandbox, so
// no plugin round: the store read and the conversion).
func BenchmarkPodSandboxStatus(b *testing.B) {
	e := newEnv(b, envConfig{})
	id := e.run(podConfig(1, true))
	ctx := context.Background()
	req := &criapi.PodSandboxStatusRequest{PodSandboxId: id}
	for b.Loop() {
		if _, err := e.srv.PodSandboxStatus(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListPodSandbox measures the kubelet's once-a-second relist
// with 100 sandboxes.
func BenchmarkListPodSandbox(b *testing.B) {
	e := newEnv(b, envConfig{})
	for i := range 100 {
		e.run(podConfig(i, true))
	}
	ctx := context.Background()
	for b.Loop() {
		rsp, err := e.srv.ListPodSandbox(ctx, &criapi.ListPodSandboxRequest{})
		if err != nil || len(rsp.GetItems()) != 100 {
			b.Fatal(rsp, err)
		}
	}
}
