package validator_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/validator"
)

func TestIdentity(t *testing.T) {
	v := validator.New(validator.Config{})
	if v.Name() != "default-validator" || validator.Name != "default-validator" {
		t.Errorf("Name = %q, %q; want default-validator", v.Name(), validator.Name)
	}
	if v.Index() != "00" || validator.Index != "00" {
		t.Errorf("Index = %q, %q; want 00", v.Index(), validator.Index)
	}
	if err := api.ValidatePluginName(validator.Name); err != nil {
		t.Error(err)
	}
	if err := api.ValidatePluginIndex(validator.Index); err != nil {
		t.Error(err)
	}
	if v.Enabled() || !validator.New(validator.Config{Enable: true}).Enabled() {
		t.Error("Enabled does not follow Config.Enable")
	}
}

func TestRejectionError(t *testing.T) {
	cfg := validator.Config{Enable: true, RequiredPlugins: []string{"policy"}}
	pod := &api.PodSandbox{Annotations: map[string]string{api.RequiredPluginsAnnotation: "x"}}
	err := validator.New(cfg).ValidatePodSandbox(context.Background(), pod, nil)
	var rej *validator.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("error %v (%T) is not a *Rejection", err, err)
	}
	if len(rej.Problems) != 2 {
		t.Errorf("Problems = %q, want 2", rej.Problems)
	}
	if !errors.Is(err, api.ErrInvalidAnnotation) {
		t.Errorf("error %v does not wrap api.ErrInvalidAnnotation", err)
	}
}

func TestNewCopiesConfig(t *testing.T) {
	cfg := validator.Config{Enable: true, RequiredPlugins: []string{"policy"}}
	v := validator.New(cfg)
	cfg.RequiredPlugins[0] = "other"
	err := v.ValidatePodSandbox(context.Background(), &api.PodSandbox{}, []*api.PluginInstance{{Name: "other", Index: "10"}})
	if got, want := errText(err), `required plugin "policy" (from configuration) is not present`; got != want {
		t.Errorf("after changing the caller's slice: %q, want %q", got, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	v := validator.New(fullConfig)
	o := owned{simple: map[api.Field]string{api.Field_OciHooks: "10-hook"}}
	req := &api.ValidateContainerAdjustmentRequest{
		Pod:       &api.PodSandbox{Annotations: map[string]string{api.RequiredPluginsAnnotation: `["audit"]`}},
		Container: &api.Container{Id: ctrID, Name: "app"},
		Owners:    o.proto(),
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if v.ValidateContainerAdjustment(context.Background(), req) == nil {
					t.Error("accepted")
					return
				}
				if v.ValidatePodSandbox(context.Background(), req.Pod, nil) == nil {
					t.Error("accepted pod")
					return
				}
			}
		})
	}
	wg.Wait()
}
