package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// object is what the multinetwork manifests are checked for.
type object struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   map[string]any `yaml:"metadata"`
	Spec       map[string]any `yaml:"spec"`
}

// objects decodes every YAML document of file.
func objects(t *testing.T, file string) []object {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	var out []object
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, o)
	}
}

// The multinetwork overlay: every resource it lists exists, its networks
// pass nri-podnet's validation, its DeviceClass selects the driver, and
// the example claims use that class.
func TestMultinetwork_Manifests(t *testing.T) {
	dir := "overlays/nri-podnet-multinetwork"
	kust := objects(t, filepath.Join(dir, "kustomization.yaml"))
	var k struct {
		Resources []string `yaml:"resources"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err := yaml.Unmarshal(b, &k); err != nil || len(kust) != 1 {
		t.Fatal(err)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	data := configMapData(t, filepath.Join(dir, "configmap-multinetwork.yaml"), "nri-podnet-multinetwork")
	cfg, err := multinet.FromBytes([]byte(data["multinetwork.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.StateDir, "/var/lib/nri-podnet/") {
		t.Errorf("stateDir %s is not under the DaemonSet's state hostPath", cfg.StateDir)
	}
	dc := objects(t, filepath.Join(dir, "deviceclass.yaml"))
	if len(dc) != 1 || dc[0].Kind != "DeviceClass" || dc[0].APIVersion != "resource.k8s.io/v1" || dc[0].Metadata["name"] != "podnet.nrinet.io" {
		t.Fatalf("deviceclass.yaml: %+v", dc)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "deviceclass.yaml")); !strings.Contains(string(b), `device.driver == "podnet.nrinet.io"`) {
		t.Error("the DeviceClass does not select driver podnet.nrinet.io")
	}
	templates := 0
	for _, o := range objects(t, "examples/multinetwork/claims.yaml") {
		if o.Kind != "ResourceClaimTemplate" {
			continue
		}
		templates++
		b, _ := yaml.Marshal(o.Spec)
		if !strings.Contains(string(b), "deviceClassName: podnet.nrinet.io") {
			t.Errorf("template %v does not use the DeviceClass", o.Metadata["name"])
		}
		for _, n := range cfg.Networks {
			if strings.Contains(string(b), `network == "`+n.Name+`"`) || strings.Contains(string(b), `kind == "`+string(n.Kind)+`"`) {
				goto found
			}
		}
		t.Errorf("template %v selects no configured network", o.Metadata["name"])
	found:
	}
	if templates != 3 {
		t.Errorf("%d templates; want 3", templates)
	}
}
