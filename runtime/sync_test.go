package runtime

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

func TestPlanSync_EncodesWhatProtobufWould(t *testing.T) {
	var pods []*api.PodSandbox
	var ctrs []*api.Container
	for i := range 300 {
		pods = append(pods, &api.PodSandbox{Id: fmt.Sprint("pod-", i), Labels: map[string]string{"app": "web", "n": fmt.Sprint(i)}})
		ctrs = append(ctrs, &api.Container{Id: fmt.Sprint("ctr-", i), PodSandboxId: fmt.Sprint("pod-", i), Env: []string{"A=1"}})
	}
	const limit = 4096
	chunks, _, err := planSync(pods, ctrs, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 {
		t.Fatalf("%d chunks, want several", len(chunks))
	}
	var gotPods, gotCtrs int
	for i, c := range chunks {
		b, err := c.encode()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != c.size-2*boolToInt(!c.more) || len(b) > limit {
			t.Fatalf("chunk %d: %d bytes, planned %d (more=%v), limit %d", i, len(b), c.size, c.more, limit)
		}
		req := &api.SynchronizeRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatalf("chunk %d does not decode: %v", i, err)
		}
		if req.GetMore() != (i < len(chunks)-1) {
			t.Fatalf("chunk %d: more=%v", i, req.GetMore())
		}
		for j, p := range req.GetPods() {
			if !proto.Equal(p, pods[gotPods+j]) {
				t.Fatalf("chunk %d pod %d differs", i, j)
			}
		}
		for j, c := range req.GetContainers() {
			if !proto.Equal(c, ctrs[gotCtrs+j]) {
				t.Fatalf("chunk %d container %d differs", i, j)
			}
		}
		gotPods += len(req.GetPods())
		gotCtrs += len(req.GetContainers())
	}
	if gotPods != len(pods) || gotCtrs != len(ctrs) {
		t.Fatalf("chunks hold %d pods, %d containers; want %d, %d", gotPods, gotCtrs, len(pods), len(ctrs))
	}
}

// TestPlanSync_LargeItems: an item larger than the chunk size travels
// alone in a chunk; one larger than any chunk can be is sent without its
// metadata; nothing keeps the state from being sent.
func TestPlanSync_LargeItems(t *testing.T) {
	small := func(id string) *api.PodSandbox { return &api.PodSandbox{Id: id} }
	big := &api.PodSandbox{Id: "big", Annotations: map[string]string{"x": string(make([]byte, 5000))}}
	huge := &api.PodSandbox{Id: "huge", Name: "h", Ips: []string{"198.18.0.9"},
		Labels: map[string]string{"x": string(make([]byte, MaxSyncChunkSize))}}
	chunks, trimmed, err := planSync([]*api.PodSandbox{small("a"), big, small("b"), huge, small("c")}, nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]string
	for _, c := range chunks {
		var in []string
		for _, it := range c.pods {
			in = append(in, it.msg.(*api.PodSandbox).GetId())
		}
		ids = append(ids, in)
	}
	if want := [][]string{{"a"}, {"big"}, {"b", "huge", "c"}}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("chunks = %v, want %v", ids, want)
	}
	if fmt.Sprint(trimmed) != "[pod huge]" {
		t.Errorf("trimmed = %v", trimmed)
	}
	got := chunks[2].pods[1].msg.(*api.PodSandbox)
	if got.GetLabels() != nil || got.GetName() != "h" || got.GetIps()[0] != "198.18.0.9" {
		t.Errorf("trimmed pod = %v, want it without labels, with its name and addresses", got)
	}
	for i, c := range chunks {
		b, err := c.encode()
		if err != nil || len(b) > MaxSyncChunkSize {
			t.Errorf("chunk %d: %d bytes, %v", i, len(b), err)
		}
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
