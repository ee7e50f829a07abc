package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

func TestPluginPlugin_LoadFails(t *testing.T) {
	ctx := context.Background()
	loader, err := api.NewPluginPlugin(ctx)
	if err != nil {
		t.Fatalf("NewPluginPlugin: %v", err)
	}
	p, err := loader.Load(ctx, "/opt/nri/plugins/10-logger.wasm", nil)
	if p != nil || !errors.Is(err, api.ErrWasmNotSupported) {
		t.Fatalf("Load = %v, %v; want an error wrapping ErrWasmNotSupported", p, err)
	}
	for _, want := range []string{"/opt/nri/plugins/10-logger.wasm", "nrinet does not run WASM plugins"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestLogRequest(t *testing.T) {
	var none *api.LogRequest
	if none.GetMsg() != "" || none.GetLevel() != api.LogRequest_LEVEL_UNSPECIFIED {
		t.Errorf("getters of nil: %q, %v", none.GetMsg(), none.GetLevel())
	}
	r := &api.LogRequest{Msg: "hello", Level: api.LogRequest_LEVEL_WARN}
	if r.GetMsg() != "hello" || r.GetLevel().String() != "LEVEL_WARN" || api.LogRequest_Level(9).String() != "9" {
		t.Errorf("got %q, %v, %v", r.GetMsg(), r.GetLevel(), api.LogRequest_Level(9))
	}
	for name, v := range api.LogRequest_Level_value {
		if api.LogRequest_Level_name[v] != name {
			t.Errorf("level %q = %d, but %d is named %q", name, v, v, api.LogRequest_Level_name[v])
		}
	}
}
