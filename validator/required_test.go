package validator_test

import (
	"context"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/validator"
)

const (
	reqKey = api.RequiredPluginsAnnotation
	tolKey = api.TolerateMissingPluginsAnnotation
)

func TestRequiredPluginsForContainer(t *testing.T) {
	global := validator.Config{Enable: true, RequiredPlugins: []string{"policy"}}
	tolerant := validator.Config{Enable: true, RequiredPlugins: []string{"policy"}, TolerateMissingPluginsAnnotation: tolKey}
	annotated := validator.Config{Enable: true}

	tests := []struct {
		name        string
		cfg         validator.Config
		annotations map[string]string
		plugins     []string
		want        string
	}{
		{name: "nothing required", cfg: annotated},
		{name: "global missing", cfg: global, plugins: []string{"10-other"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "global present by name", cfg: global, plugins: []string{"10-other", "50-policy"}},
		{name: "global present by full name", cfg: validator.Config{Enable: true, RequiredPlugins: []string{"50-policy"}}, plugins: []string{"50-policy"}},
		{name: "global wrong index", cfg: validator.Config{Enable: true, RequiredPlugins: []string{"51-policy"}}, plugins: []string{"50-policy"},
			want: `required plugin "51-policy" (from configuration) is not present`},
		{name: "disabled ignores required", cfg: validator.Config{RequiredPlugins: []string{"policy"}}},

		// Annotation lookup precedence for container "app".
		{name: "container annotation", cfg: annotated,
			annotations: map[string]string{reqKey + "/container.app": `["c"]`, reqKey + "/pod": `["p"]`, reqKey: `["k"]`},
			want:        `required plugin "c" (from annotation "required-plugins.noderesource.dev/container.app") is not present`},
		{name: "other container's annotation ignored", cfg: annotated,
			annotations: map[string]string{reqKey + "/container.sidecar": `["c"]`, reqKey + "/pod": `["p"]`, reqKey: `["k"]`},
			want:        `required plugin "p" (from annotation "required-plugins.noderesource.dev/pod") is not present`},
		{name: "plain annotation", cfg: annotated,
			annotations: map[string]string{reqKey + "/container.sidecar": `["c"]`, reqKey: `["k"]`},
			want:        `required plugin "k" (from annotation "required-plugins.noderesource.dev") is not present`},
		{name: "container annotation empties pod list", cfg: annotated,
			annotations: map[string]string{reqKey + "/container.app": `[]`, reqKey + "/pod": `["p"]`}},
		{name: "annotation adds to global", cfg: global, plugins: []string{"50-policy"},
			annotations: map[string]string{reqKey: "- 10-audit\n- policy\n"},
			want:        `required plugin "10-audit" (from annotation "required-plugins.noderesource.dev") is not present`},
		{name: "all missing reported once each", cfg: global,
			annotations: map[string]string{reqKey: `["audit", "policy", "audit"]`},
			want: `required plugin "policy" (from configuration) is not present; ` +
				`required plugin "audit" (from annotation "required-plugins.noderesource.dev") is not present`},
		{name: "annotation satisfied by name and full name", cfg: annotated, plugins: []string{"10-audit", "20-quota"},
			annotations: map[string]string{reqKey: `["audit", "20-quota"]`}},
		{name: "malformed annotation", cfg: global, plugins: []string{"50-policy"},
			annotations: map[string]string{reqKey + "/pod": "audit"},
			want:        `invalid annotation "required-plugins.noderesource.dev/pod": value "audit": want a list of plugin names: yaml: unmarshal errors: line 1: cannot unmarshal !!str ` + "`audit`" + ` into []string`},
		{name: "malformed annotation and missing global", cfg: global,
			annotations: map[string]string{reqKey: `["a b"]`},
			want: `invalid annotation "required-plugins.noderesource.dev": value "[\"a b\"]": entry 0 "a b": invalid character ' ' at offset 1; ` +
				`required plugin "policy" (from configuration) is not present`},

		// Toleration.
		{name: "tolerated", cfg: tolerant, annotations: map[string]string{tolKey: "true", reqKey: `["audit"]`}},
		{name: "tolerated skips malformed annotation", cfg: tolerant, annotations: map[string]string{tolKey + "/pod": "1", reqKey: `audit`}},
		{name: "container toleration", cfg: tolerant, annotations: map[string]string{tolKey + "/container.app": "true", tolKey: "false"}},
		{name: "container toleration overrides pod", cfg: tolerant, annotations: map[string]string{tolKey + "/container.app": "false", tolKey + "/pod": "true"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "other container's toleration ignored", cfg: tolerant, annotations: map[string]string{tolKey + "/container.init": "true"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "not tolerated", cfg: tolerant, annotations: map[string]string{tolKey: "false"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "toleration not configured", cfg: global, annotations: map[string]string{tolKey: "true"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "custom toleration key", cfg: validator.Config{Enable: true, RequiredPlugins: []string{"policy"}, TolerateMissingPluginsAnnotation: "example.com/no-nri"},
			annotations: map[string]string{"example.com/no-nri": "True"}},
		{name: "malformed toleration", cfg: tolerant, annotations: map[string]string{tolKey + "/pod": "yes"},
			want: `invalid annotation "tolerate-missing-nri-plugins.noderesource.dev/pod": value "yes": want true or false; ` +
				`required plugin "policy" (from configuration) is not present`},
		{name: "malformed toleration, nothing missing", cfg: tolerant, plugins: []string{"50-policy"}, annotations: map[string]string{tolKey: ""},
			want: `invalid annotation "tolerate-missing-nri-plugins.noderesource.dev": value "": want true or false`},
	}
	for _, tt := range tests {
		req := &api.ValidateContainerAdjustmentRequest{
			Pod:       &api.PodSandbox{Id: "pod-id", Name: "pod", Annotations: tt.annotations},
			Container: &api.Container{Id: ctrID, Name: "app"},
			Plugins:   plugins(t, tt.plugins...),
		}
		err := validator.New(tt.cfg).ValidateContainerAdjustment(context.Background(), req)
		if got := errText(err); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestValidatePodSandbox(t *testing.T) {
	cfg := validator.Config{Enable: true, RequiredPlugins: []string{"policy"}, TolerateMissingPluginsAnnotation: tolKey}
	tests := []struct {
		name        string
		cfg         validator.Config
		annotations map[string]string
		plugins     []string
		want        string
	}{
		{name: "present", cfg: cfg, plugins: []string{"50-policy"}},
		{name: "missing", cfg: cfg, plugins: []string{"10-other"},
			want: `required plugin "policy" (from configuration) is not present`},
		{name: "disabled", cfg: validator.Config{RequiredPlugins: []string{"policy"}}},
		{name: "pod annotation before plain", cfg: cfg, plugins: []string{"50-policy"},
			annotations: map[string]string{reqKey + "/pod": `["net"]`, reqKey: `["other"]`},
			want:        `required plugin "net" (from annotation "required-plugins.noderesource.dev/pod") is not present`},
		{name: "plain annotation", cfg: cfg, plugins: []string{"50-policy", "20-net"},
			annotations: map[string]string{reqKey: `["20-net", "audit"]`},
			want:        `required plugin "audit" (from annotation "required-plugins.noderesource.dev") is not present`},
		{name: "container annotations ignored", cfg: cfg, plugins: []string{"50-policy"},
			annotations: map[string]string{reqKey + "/container.app": `["c"]`, tolKey + "/container.app": "false"}},
		{name: "container toleration does not cover the pod", cfg: cfg,
			annotations: map[string]string{tolKey + "/container.app": "true"},
			want:        `required plugin "policy" (from configuration) is not present`},
		{name: "tolerated", cfg: cfg, annotations: map[string]string{tolKey + "/pod": "true", reqKey: `["net"]`}},
		{name: "malformed annotation", cfg: cfg, plugins: []string{"50-policy"},
			annotations: map[string]string{reqKey: `{"net": true}`},
			want:        `invalid annotation "required-plugins.noderesource.dev": value "{\"net\": true}": want a list of plugin names: yaml: unmarshal errors: line 1: cannot unmarshal !!map into []string`},
	}
	for _, tt := range tests {
		pod := &api.PodSandbox{Id: "pod-id", Name: "pod", Annotations: tt.annotations}
		err := validator.New(tt.cfg).ValidatePodSandbox(context.Background(), pod, plugins(t, tt.plugins...))
		if got := errText(err); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
