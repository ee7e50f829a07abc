package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/plugins/podnet"
)

// TestChartSchema_PodnetConfig checks the Helm chart's values schema
// against nri-podnet's configuration: the chart's config value takes
// exactly the keys of podnet.Config, with their JSON types, but stateDir
// (the chart's, the state volume) and subnets and gateways (with -kube,
// the Node's pod CIDRs). A key added to podnet.Config needs its place in
// the chart (helm/nrinet/values.schema.json, docs/deploy.md's values
// table).
func TestChartSchema_PodnetConfig(t *testing.T) {
	const file = "helm/nrinet/values.schema.json"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type property struct {
		Type string `json:"type"`
	}
	var schema struct {
		Properties struct {
			Config struct {
				AdditionalProperties *bool               `json:"additionalProperties"`
				Properties           map[string]property `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	config := schema.Properties.Config
	if config.AdditionalProperties == nil || *config.AdditionalProperties {
		t.Errorf("%s: config takes keys it does not name, which nri-podnet refuses", file)
	}
	notValues := []string{"stateDir", "subnets", "gateways"}
	want := map[string]string{}
	ct := reflect.TypeFor[podnet.Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || slices.Contains(notValues, name) {
			continue
		}
		want[name] = map[reflect.Kind]string{
			reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean", reflect.Slice: "array",
			reflect.Pointer: "object", reflect.Struct: "object",
		}[f.Type.Kind()]
	}
	got := map[string]string{}
	for name, p := range config.Properties {
		got[name] = p.Type
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: config's keys and types %v, want podnet.Config's %v (less %q)", file, got, want, notValues)
	}
}
