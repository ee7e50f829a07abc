package nri

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	types "github.com/containerd/nri/types/v1"
)

type task struct{}

func (task) ID() string  { return "sb-1" }
func (task) Pid() uint32 { return 42 }
func (task) Spec(context.Context) (*oci.Spec, error) {
	return &oci.Spec{
		Annotations: map[string]string{"a": "b"},
		Linux:       &oci.Linux{CgroupsPath: "/kubepods/x", Namespaces: []oci.LinuxNamespace{{Type: "network", Path: "/run/netns/x"}}},
	}, nil
}

// writePlugin writes an NRI 0.1 plugin as a shell script that saves its
// request and answers with script's output.
func writePlugin(t *testing.T, dir, name, answer string) string {
	t.Helper()
	saved := filepath.Join(dir, name+".request")
	script := "#!/bin/sh\n[ \"$1\" = invoke ] || exit 3\ncat > " + saved + "\necho '" + answer + "'\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return saved
}

func TestClient_InvokeWithSandbox(t *testing.T) {
	dir := t.TempDir()
	first := writePlugin(t, dir, "first", `{"plugin":"first","version":"0.1","metadata":{"k":"v"}}`)
	second := writePlugin(t, dir, "second", `{"plugin":"second","version":"0.1"}`)
	c := &Client{binPath: dir, conf: &types.ConfigList{Version: "0.1", Plugins: []*types.Plugin{
		{Type: "first", Conf: json.RawMessage(`{"x":1}`)}, {Type: "second"},
	}}}
	if got := c.Plugins(); strings.Join(got, ",") != "first,second" {
		t.Errorf("Plugins = %v", got)
	}
	res, err := c.InvokeWithSandbox(context.Background(), task{}, types.Create, &Sandbox{ID: "sb-1", Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Metadata["k"] != "v" || res[1].Plugin != "second" {
		t.Fatalf("results = %+v", res)
	}
	var req types.Request
	b, _ := os.ReadFile(second)
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if req.ID != "sb-1" || !req.IsSandbox() || req.Pid != 42 || req.State != types.Create || req.Labels["app"] != "web" ||
		req.Spec.Namespaces["network"] != "/run/netns/x" || req.Spec.CgroupsPath != "/kubepods/x" || len(req.Results) != 1 {
		t.Errorf("second plugin got %+v", req)
	}
	b, _ = os.ReadFile(first)
	if !strings.Contains(string(b), `"conf":{"x":1}`) {
		t.Errorf("first plugin's request lacks its conf: %s", b)
	}
}

func TestClient_PluginError(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "bad", `{"plugin":"bad","error":"no way"}`)
	c := &Client{binPath: dir, conf: &types.ConfigList{Version: "0.1", Plugins: []*types.Plugin{{Type: "bad"}}}}
	_, err := c.Invoke(context.Background(), task{}, types.Delete)
	if err == nil || err.Error() != "plugin: bad: no way" {
		t.Fatalf("Invoke = %v, want the plugin's error with its name", err)
	}
}

func TestClient_NoConfigurationNoPlugins(t *testing.T) {
	c, err := loadConfig(filepath.Join(t.TempDir(), "conf.json"))
	if err != nil || c.Version != Version || len(c.Plugins) != 0 {
		t.Fatalf("loadConfig of a missing file = %+v, %v", c, err)
	}
}

// TestTaskMethods: Task has upstream's method set (ID, Pid from its
// embedded process interface, and Spec).
func TestTaskMethods(t *testing.T) {
	var _ Task = task{}
	typ := reflect.TypeFor[Task]()
	var names []string
	for i := range typ.NumMethod() {
		names = append(names, typ.Method(i).Name)
	}
	if strings.Join(names, ",") != "ID,Pid,Spec" {
		t.Errorf("Task's methods are %v", names)
	}
}
