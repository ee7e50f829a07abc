package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/containerd/nri/types/v1"
)

// TestRequestJSON checks the wire form NRI 0.1 plugins read and write.
func TestRequestJSON(t *testing.T) {
	req := &v1.Request{
		Conf:      json.RawMessage(`{"x":1}`),
		Version:   "0.1",
		State:     v1.Create,
		ID:        "sb1",
		SandboxID: "sb1",
		Pid:       42,
		Spec:      &v1.Spec{Resources: json.RawMessage(`{}`), CgroupsPath: "/k8s/sb1", Namespaces: map[string]string{"network": "/run/netns/x"}},
		Labels:    map[string]string{"app": "a"},
		Results:   []*v1.Result{{Plugin: "p0", Version: "0.1", Metadata: map[string]string{"k": "v"}}},
	}
	const want = `{"conf":{"x":1},"version":"0.1","state":"create","id":"sb1","sandboxID":"sb1","pid":42,` +
		`"spec":{"resources":{},"namespaces":{"network":"/run/netns/x"},"cgroupsPath":"/k8s/sb1"},` +
		`"labels":{"app":"a"},"results":[{"plugin":"p0","version":"0.1","error":"","metadata":{"k":"v"}}]}`
	b, err := json.Marshal(req)
	if err != nil || string(b) != want {
		t.Fatalf("Marshal = %s, %v\nwant %s", b, err, want)
	}
	var back v1.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(req, &back); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if !back.IsSandbox() {
		t.Errorf("IsSandbox() = false for ID == SandboxID")
	}
}

func TestResult(t *testing.T) {
	req := &v1.Request{Version: "0.2", ID: "c1", SandboxID: "sb1"}
	if req.IsSandbox() {
		t.Errorf("IsSandbox() = true for a container")
	}
	res := req.NewResult("p1")
	if res.Plugin != "p1" || res.Version != "0.2" || res.Metadata == nil || res.Err() != nil {
		t.Fatalf("NewResult = %+v (err %v)", res, res.Err())
	}
	res.Error = "boom"
	if err := res.Err(); err == nil || err.Error() != "boom" {
		t.Errorf("Err() = %v, want boom", err)
	}
}
