package validator_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/nrinet/nrinet/validator"
)

var fullConfig = validator.Config{
	Enable:                                true,
	RejectOCIHookAdjustment:               true,
	RejectRuntimeDefaultSeccompAdjustment: true,
	RejectUnconfinedSeccompAdjustment:     true,
	RejectCustomSeccompAdjustment:         true,
	RejectNamespaceAdjustment:             true,
	RejectSysctlAdjustment:                true,
	RequiredPlugins:                       []string{"policy", "10-audit"},
	TolerateMissingPluginsAnnotation:      "tolerate-missing-nri-plugins.noderesource.dev",
}

func TestConfigTOML(t *testing.T) {
	const doc = `
enable = true
reject_oci_hook_adjustment = true
reject_runtime_default_seccomp_adjustment = true
reject_unconfined_seccomp_adjustment = true
reject_custom_seccomp_adjustment = true
reject_namespace_adjustment = true
reject_sysctl_adjustment = true
required_plugins = ["policy", "10-audit"]
tolerate_missing_plugins_annotation = "tolerate-missing-nri-plugins.noderesource.dev"
`
	var cfg validator.Config
	md, err := toml.Decode(doc, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("undecoded keys: %v", u)
	}
	if !reflect.DeepEqual(cfg, fullConfig) {
		t.Errorf("decoded %+v\nwant    %+v", cfg, fullConfig)
	}
}

func TestConfigJSONNames(t *testing.T) {
	b, err := json.Marshal(fullConfig)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"enable", "rejectOCIHookAdjustment", "rejectRuntimeDefaultSeccompAdjustment",
		"rejectUnconfinedSeccompAdjustment", "rejectCustomSeccompAdjustment",
		"rejectNamespaceAdjustment", "rejectSysctlAdjustment", "requiredPlugins",
		"tolerateMissingPluginsAnnotation",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("JSON lacks %q: %s", name, b)
		}
		delete(got, name)
	}
	if len(got) > 0 {
		t.Errorf("unexpected JSON fields %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     validator.Config
		wantErr string
	}{
		{name: "zero"},
		{name: "full", cfg: fullConfig},
		{name: "custom toleration key", cfg: validator.Config{TolerateMissingPluginsAnnotation: "example.com/skip-nri"}},
		{name: "bad required plugins", cfg: validator.Config{RequiredPlugins: []string{"ok", "", "a b"}},
			wantErr: "default validator: required_plugins[1]: api: invalid plugin name \"\": must not be empty\n" +
				"default validator: required_plugins[2]: api: invalid plugin name \"a b\": invalid character ' ' at offset 1"},
		{name: "toleration key with space", cfg: validator.Config{TolerateMissingPluginsAnnotation: "skip nri"},
			wantErr: `default validator: tolerate_missing_plugins_annotation "skip nri": contains white space or unprintable characters`},
		{name: "toleration key with control character", cfg: validator.Config{TolerateMissingPluginsAnnotation: "skip\x00"},
			wantErr: `default validator: tolerate_missing_plugins_annotation "skip\x00": contains white space or unprintable characters`},
		{name: "toleration key is the required-plugins key", cfg: validator.Config{TolerateMissingPluginsAnnotation: "required-plugins.noderesource.dev"},
			wantErr: `default validator: tolerate_missing_plugins_annotation "required-plugins.noderesource.dev": is the required-plugins annotation`},
	}
	for _, tt := range tests {
		if got := errText(tt.cfg.Validate()); got != tt.wantErr {
			t.Errorf("%s: Validate() =\n%q\nwant\n%q", tt.name, got, tt.wantErr)
		}
	}
}
