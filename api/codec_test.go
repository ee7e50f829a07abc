package api_test

import (
	"fmt"
	"maps"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"
	"github.com/nrinet/nrinet/api"
)

func samplePod() *api.PodSandbox {
	return &api.PodSandbox{
		Id: "p1", Name: "web", Namespace: "shop", Uid: "u1",
		Labels:      map[string]string{"app": "web", "tier": "front"},
		Annotations: map[string]string{"a": "1"},
		Linux: &api.LinuxPodSandbox{
			Namespaces:   []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}},
			PodResources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{}}},
		},
		Ips: []string{"198.18.0.2"},
	}
}

func TestFast_SameWireBytes(t *testing.T) {
	pod := samplePod()
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(api.Fast(pod))
	if err != nil {
		t.Fatal(err)
	}
	// Deterministic marshaling falls back to protobuf-go (vtprotobuf does
	// not sort map keys), so those bytes match exactly.
	if string(got) != string(want) {
		t.Fatalf("fast encoding differs:\n got % x\nwant % x", got, want)
	}
	fastBytes, err := proto.Marshal(api.Fast(pod))
	if err != nil {
		t.Fatal(err)
	}
	if len(fastBytes) != len(want) {
		t.Fatalf("fast encoding is %d bytes, want %d", len(fastBytes), len(want))
	}
	if n := proto.Size(api.Fast(pod)); n != len(want) {
		t.Fatalf("Size = %d, want %d", n, len(want))
	}
	back := &api.PodSandbox{Name: "stale"}
	if err := proto.Unmarshal(fastBytes, api.Fast(back)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod, back, protocmp.Transform()); diff != "" {
		t.Fatalf("round trip differs (-want +got):\n%s", diff)
	}
	// Presence of an empty optional wrapper survives.
	if back.GetLinux().GetPodResources().GetCpu().GetShares() == nil {
		t.Fatal("empty OptionalUInt64 lost its presence")
	}
}

func TestFast_UnknownFieldsKept(t *testing.T) {
	// Field 99 of PodSandbox is unknown to this schema.
	raw := append([]byte{0x0a, 0x02, 'p', '1'}, 0x9a, 0x06, 0x01, 'x')
	pod := &api.PodSandbox{}
	if err := proto.Unmarshal(raw, api.Fast(pod)); err != nil {
		t.Fatal(err)
	}
	out, err := proto.Marshal(api.Fast(pod))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(raw) {
		t.Fatalf("re-encoded % x, want % x", out, raw)
	}
}

func BenchmarkCodec(b *testing.B) {
	pod := samplePod()
	data, _ := proto.Marshal(pod)
	for _, tc := range []struct {
		name string
		wrap func(*api.PodSandbox) proto.Message
	}{
		{"protobuf-go", func(p *api.PodSandbox) proto.Message { return p }},
		{"vtproto", func(p *api.PodSandbox) proto.Message { return api.Fast(p) }},
	} {
		b.Run("marshal/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := proto.Marshal(tc.wrap(pod)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("unmarshal/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(data, tc.wrap(&api.PodSandbox{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSyncDecode decodes a Synchronize chunk of 100 pods and 300
// containers, each with a few labels and annotations.
func BenchmarkSyncDecode(b *testing.B) {
	req := &api.SynchronizeRequest{}
	for i := range 100 {
		pod := samplePod()
		pod.Id = fmt.Sprint("pod-", i)
		for j := range 8 {
			pod.Labels[fmt.Sprint("example.com/label-", j)] = fmt.Sprint("value-", i, "-", j)
		}
		req.Pods = append(req.Pods, pod)
		for j := range 3 {
			req.Containers = append(req.Containers, &api.Container{
				Id: fmt.Sprint("ctr-", i, "-", j), PodSandboxId: pod.Id, Name: fmt.Sprint("c", j),
				Labels: maps.Clone(pod.Labels), Annotations: map[string]string{"io.kubernetes.container.hash": "0a1b2c3d"},
				Args: []string{"/bin/app", "--port=8080"}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/root"},
			})
		}
	}
	data, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		wrap func(*api.SynchronizeRequest) proto.Message
	}{
		{"protobuf-go", func(m *api.SynchronizeRequest) proto.Message { return m }},
		{"Fast", func(m *api.SynchronizeRequest) proto.Message { return api.Fast(m) }},
		{"FastShared", func(m *api.SynchronizeRequest) proto.Message { return api.FastShared(m) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := proto.Unmarshal(data, tc.wrap(&api.SynchronizeRequest{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
