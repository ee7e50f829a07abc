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
	chunks, err := planSync(pods, ctrs, limit)
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

func TestPlanSync_ItemTooLarge(t *testing.T) {
	big := &api.PodSandbox{Id: "huge", Annotations: map[string]string{"x": string(make([]byte, 5000))}}
	if _, err := planSync([]*api.PodSandbox{big}, nil, 4096); err == nil {
		t.Fatal("a pod larger than the limit was accepted")
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
