package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nrinet/nrinet/plugins/cni"
	"github.com/nrinet/nrinet/plugins/podnet"
)

// configMapData returns the data of the ConfigMap name in the manifest
// file, which holds that one object.
func configMapData(t *testing.T, file, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Metadata.Name != name {
		t.Fatalf("%s: %s %s %s, want v1 ConfigMap %s", file, cm.APIVersion, cm.Kind, cm.Metadata.Name, name)
	}
	return cm.Data
}

// strictJSON decodes data into v as the plugins decode their
// configuration: an unknown field is an error.
func strictJSON(t *testing.T, data string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("configuration %s: %v", data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("configuration %s: data after the object", data)
	}
}

func TestConfigMaps(t *testing.T) {
	for _, tc := range []struct {
		file, name string
		check      func(t *testing.T, config string)
	}{
		{"base/configmap.yaml", "nri-podnet-config", func(t *testing.T, config string) {
			var c podnet.Config
			strictJSON(t, config, &c)
			// With -kube the subnets are the Node's pod CIDRs.
			if len(c.Subnets) != 0 {
				t.Errorf("subnets %q in %s", c.Subnets, config)
			}
		}},
		{"overlays/nri-cni/configmap.yaml", "nri-cni-config", func(t *testing.T, config string) {
			var c cni.Config
			strictJSON(t, config, &c)
			if err := c.Validate(); err != nil {
				t.Errorf("%s: %v", config, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := configMapData(t, tc.file, tc.name)
			config, ok := data["config.json"]
			if !ok {
				t.Fatalf("%s: no config.json", tc.file)
			}
			tc.check(t, config)
		})
	}
}
