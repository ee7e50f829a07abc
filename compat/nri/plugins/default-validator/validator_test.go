package validator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator"
	nvalidator "github.com/nrinet/nrinet/validator"
)

// request returns a validation request for container "ctr0" of pod "pod0"
// whose OCI hooks, if hooksBy is not empty, were injected by that plugin,
// with the given plugins present and pod annotations.
func request(hooksBy string, present []string, annotations map[string]string) *api.ValidateContainerAdjustmentRequest {
	owners := &api.FieldOwners{Simple: map[int32]string{}}
	if hooksBy != "" {
		owners.Simple[int32(api.Field_OciHooks)] = hooksBy
	}
	req := &api.ValidateContainerAdjustmentRequest{
		Pod:       &api.PodSandbox{Id: "pod0", Name: "pod0", Annotations: annotations},
		Container: &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"},
		Adjust:    &api.ContainerAdjustment{},
		Owners:    &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"ctr0": owners}},
	}
	for _, p := range present {
		idx, name, _ := strings.Cut(p, "-")
		req.Plugins = append(req.Plugins, &api.PluginInstance{Name: name, Index: idx})
	}
	return req
}

func TestDefaultValidator(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cfg     *validator.DefaultValidatorConfig
		req     *api.ValidateContainerAdjustmentRequest
		rejects []string // substrings of the error, nil to accept
	}{
		{"nil config accepts", nil, request("10-hooker", nil, nil), nil},
		{"hooks allowed", &validator.DefaultValidatorConfig{}, request("10-hooker", nil, nil), nil},
		{"hooks rejected", &validator.DefaultValidatorConfig{RejectOCIHookAdjustment: true}, request("10-hooker", nil, nil), []string{"10-hooker"}},
		{
			// As upstream, the validator itself validates even when not
			// enabled: Enable decides whether a runtime runs it.
			"not enabled still validates",
			&validator.DefaultValidatorConfig{Enable: false, RejectOCIHookAdjustment: true},
			request("10-hooker", nil, nil), []string{"10-hooker"},
		},
		{"required plugin present", &validator.DefaultValidatorConfig{RequiredPlugins: []string{"podnet"}}, request("", []string{"10-podnet"}, nil), nil},
		{"required plugin missing", &validator.DefaultValidatorConfig{RequiredPlugins: []string{"podnet"}}, request("", nil, nil), []string{`"podnet"`}},
		{
			"annotated required plugin missing",
			&validator.DefaultValidatorConfig{},
			request("", nil, map[string]string{validator.RequiredPlugins: `["20-gpu"]`}), []string{`"20-gpu"`},
		},
		{
			"missing plugin tolerated",
			&validator.DefaultValidatorConfig{RequiredPlugins: []string{"podnet"}, TolerateMissingAnnotation: "tolerate.example"},
			request("", nil, map[string]string{"tolerate.example/container.ctr0": "true"}), nil,
		},
		{
			"all problems reported",
			&validator.DefaultValidatorConfig{RejectOCIHookAdjustment: true, RequiredPlugins: []string{"podnet"}},
			request("10-hooker", nil, nil), []string{"10-hooker", `"podnet"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validator.NewDefaultValidator(tc.cfg).ValidateContainerAdjustment(ctx, tc.req)
			if tc.rejects == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var rejection *nvalidator.Rejection
			if !errors.Is(err, validator.ErrValidation) || !errors.As(err, &rejection) {
				t.Fatalf("error %v does not wrap ErrValidation and a *validator.Rejection", err)
			}
			for _, want := range tc.rejects {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

func TestDefaultValidator_SetConfig(t *testing.T) {
	ctx := context.Background()
	v := validator.NewDefaultValidator(&validator.DefaultValidatorConfig{})
	req := request("10-hooker", nil, nil)
	if err := v.ValidateContainerAdjustment(ctx, req); err != nil {
		t.Fatalf("before SetConfig: %v", err)
	}
	v.SetConfig(&validator.DefaultValidatorConfig{RejectOCIHookAdjustment: true})
	if err := v.ValidateContainerAdjustment(ctx, req); err == nil {
		t.Fatalf("after SetConfig: accepted")
	}
	v.SetConfig(nil) // ignored
	if err := v.ValidateContainerAdjustment(ctx, req); err == nil {
		t.Fatalf("after SetConfig(nil): accepted")
	}
}

// TestConfigKeys checks upstream's toml keys (of containerd's
// config.toml, read with the decoder containerd uses) and yaml keys.
func TestConfigKeys(t *testing.T) {
	want := validator.DefaultValidatorConfig{
		Enable: true, RejectOCIHookAdjustment: true, RejectRuntimeDefaultSeccompAdjustment: true,
		RejectUnconfinedSeccompAdjustment: true, RejectCustomSeccompAdjustment: true,
		RejectNamespaceAdjustment: true, RejectSysctlAdjustment: true,
		RequiredPlugins: []string{"podnet"}, TolerateMissingAnnotation: "tolerate.example",
	}
	const tomlDoc = `
enable = true
reject_oci_hook_adjustment = true
reject_runtime_default_seccomp_adjustment = true
reject_unconfined_seccomp_adjustment = true
reject_custom_seccomp_adjustment = true
reject_namespace_adjustment = true
reject_sysctl_adjustment = true
required_plugins = ["podnet"]
tolerate_missing_plugins_annotation = "tolerate.example"
`
	var fromTOML validator.DefaultValidatorConfig
	dec := toml.NewDecoder(strings.NewReader(tomlDoc)) // containerd's TOML decoder
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fromTOML); err != nil {
		t.Fatalf("toml: %v", err)
	}
	if d := cmp.Diff(want, fromTOML); d != "" {
		t.Errorf("toml (-want +got):\n%s", d)
	}
	const yamlDoc = `
enable: true
rejectOCIHookAdjustment: true
rejectRuntimeDefaultSeccompAdjustment: true
rejectUnconfinedSeccompAdjustment: true
rejectCustomSeccompAdjustment: true
rejectNamespaceAdjustment: true
rejectSysctlAdjustment: true
requiredPlugins: [podnet]
tolerateMissingPluginsAnnotation: tolerate.example
`
	var fromYAML validator.DefaultValidatorConfig
	if err := yaml.Unmarshal([]byte(yamlDoc), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, fromYAML); d != "" {
		t.Errorf("yaml (-want +got):\n%s", d)
	}
	// Every field reaches nrinet's configuration.
	c := want.Config()
	if !c.Enable || !c.RejectSysctlAdjustment || c.TolerateMissingPluginsAnnotation != "tolerate.example" || len(c.RequiredPlugins) != 1 {
		t.Errorf("Config() = %+v", c)
	}
}
