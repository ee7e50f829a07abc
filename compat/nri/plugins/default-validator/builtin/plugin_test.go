package builtin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator"
	"github.com/containerd/nri/plugins/default-validator/builtin"
)

func TestGetDefaultValidator(t *testing.T) {
	if p := builtin.GetDefaultValidator(nil); p != nil {
		t.Errorf("nil config: %+v, want nil", p)
	}
	if p := builtin.GetDefaultValidator(&builtin.DefaultValidatorConfig{RejectOCIHookAdjustment: true}); p != nil {
		t.Errorf("disabled: %+v, want nil", p)
	}
	p := builtin.GetDefaultValidator(&builtin.DefaultValidatorConfig{Enable: true, RequiredPlugins: []string{"podnet"}})
	if p == nil || p.Index != "00" || p.Base != "default-validator" {
		t.Fatalf("enabled: %+v, want 00-default-validator", p)
	}
	h := p.Handlers
	if h.ValidateContainerAdjustment == nil || h.CreateContainer != nil || h.RunPodSandbox != nil || h.Configure != nil {
		t.Fatalf("handlers: want ValidateContainerAdjustment only, got %+v", h)
	}
	req := &api.ValidateContainerAdjustmentRequest{
		Pod:       &api.PodSandbox{Id: "pod0"},
		Container: &api.Container{Id: "ctr0", Name: "ctr0"},
	}
	if err := h.ValidateContainerAdjustment(context.Background(), req); !errors.Is(err, validator.ErrValidation) {
		t.Errorf("missing required plugin: %v, want a validation error", err)
	}
	req.Plugins = []*api.PluginInstance{{Name: "podnet", Index: "10"}}
	if err := h.ValidateContainerAdjustment(context.Background(), req); err != nil {
		t.Errorf("required plugin present: %v", err)
	}
}
