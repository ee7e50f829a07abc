package helmchart_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// chartDir is nrinet's Helm chart.
const chartDir = "../../helm/nrinet"

// TestRender_BadValues renders the chart with values it refuses: the
// render fails, naming the value.
func TestRender_BadValues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags helmchart.Flags
		want  []string // in the error
	}{
		{"unknown mode", set("mode=calico"), []string{"/mode", "nri-podnet"}},
		{"misspelt key", set("networkpolicy=false"), []string{"networkpolicy"}},
		{"port out of range", set("healthPort=70000"), []string{"/healthPort", "65,535"}},
		{"stateDir is the chart's", set("config.stateDir=/tmp"), []string{"stateDir"}},
		{"subnets are the Node's", set("config.subnets={10.0.0.0/24}"), []string{"subnets"}},
		{"unknown config key", set("config.bridgeName=br0"), []string{"bridgeName"}},
		{
			"noBridgeNetfilter with networkPolicy", set("config.noBridgeNetfilter=true"),
			[]string{"config.noBridgeNetfilter", "networkPolicy=false"},
		},
		{"extraEnv of the chart's", set("extraEnv[0].name=NODE_NAME"), []string{"extraEnv NODE_NAME"}},
		{"extraEnv GOMEMLIMIT", set("extraEnv[0].name=GOMEMLIMIT"), []string{"extraEnv GOMEMLIMIT", "goMemLimit"}},
		{"extraEnv value a number", set("extraEnv[0].name=PORT", "extraEnv[0].value=6443"), []string{"/extraEnv/0/value"}},
		{"extraArgs not strings", set("extraArgs={-idx,20}"), []string{"/extraArgs/1"}},
		{"a host path not absolute", set("hostPaths.nri=run/nri"), []string{"/hostPaths/nri"}},
		{"an unknown host path", set("hostPaths.cni=/etc/cni"), []string{"cni"}},
		{"monitoring not a boolean", set("monitoring.rules=yes"), []string{"/monitoring/rules"}},
		{"podNetworkLabel not a label key", set("podNetworkLabel=nrinet.io/pod network"), []string{"/podNetworkLabel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := helmchart.Values(tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			m, err := helmchart.Render(context.Background(), chartDir, vals)
			if err == nil {
				t.Fatalf("rendered with %v:\n%s", tc.flags, m)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestRender_Accepted renders the chart with values it accepts that the
// kustomize comparisons of deploy/test do not use.
func TestRender_Accepted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags helmchart.Flags
		want  []string // in the manifest
	}{
		{"GOMEMLIMIT in mode nri-cni", set("mode=nri-cni", "extraEnv[0].name=GOMEMLIMIT", "extraEnv[0].value=64MiB"), []string{"name: GOMEMLIMIT", "value: 64MiB"}},
		{"no GOMEMLIMIT, then of extraEnv", set("goMemLimit=", "extraEnv[0].name=GOMEMLIMIT", "extraEnv[0].value=1GiB"), []string{"value: 1GiB"}},
		{"noBridgeNetfilter without networkPolicy", set("networkPolicy=false", "config.noBridgeNetfilter=true"), []string{`"noBridgeNetfilter": true`, "-network-policy=false"}},
		{"no priority class", set("priorityClassName="), nil},
		{"an opt-in label of one's own, nri-cni", set("mode=nri-cni", "podNetworkLabel=example.com/network"), []string{"example.com/network: cni", "kubernetes.io/os: linux"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := helmchart.Values(tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			m, err := helmchart.Render(context.Background(), chartDir, vals)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(m, w) {
					t.Errorf("the manifest does not have %q:\n%s", w, m)
				}
			}
		})
	}
}

// TestValues merges values as helm's -f, --set and --set-string do.
func TestValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte("healthPort: 9470\nimage:\n  tag: v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		flags   helmchart.Flags
		want    map[string]any
		wantErr string
	}{
		{"none", helmchart.Flags{}, map[string]any{}, ""},
		{"a file", helmchart.Flags{Files: []string{file}}, map[string]any{"healthPort": float64(9470), "image": map[string]any{"tag": "v1"}}, ""},
		{
			"set over the file", helmchart.Flags{Files: []string{file}, Set: []string{"image.tag=v2", "healthPort=9471"}},
			map[string]any{"healthPort": int64(9471), "image": map[string]any{"tag": "v2"}}, "",
		},
		{"set-string over set", helmchart.Flags{Set: []string{"image.tag=1"}, SetString: []string{"image.tag=2"}}, map[string]any{"image": map[string]any{"tag": "2"}}, ""},
		{"no such file", helmchart.Flags{Files: []string{file + ".missing"}}, nil, "values.yaml.missing"},
		{"malformed set", helmchart.Flags{Set: []string{"image.tag"}}, nil, `"image.tag"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := helmchart.Values(tc.flags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestLint_NoChart: the linter's own failure is an error naming the
// directory.
func TestLint_NoChart(t *testing.T) {
	dir := t.TempDir()
	if _, err := helmchart.Lint(dir, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("lint of an empty directory: error %v, want one naming %s", err, dir)
	}
}

// TestLint_Warning: a chart with a warning fails the lint (as helm lint
// --strict), naming the file.
func TestLint_Warning(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: x\nversion: 0.1.0\n",
		"values.yaml":               "{}\n",
		"templates/configmap.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"templates/deprecated.yaml": "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: x\n",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := helmchart.Lint(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "deprecated.yaml") {
		t.Errorf("lint: error %v, want a warning about templates/deprecated.yaml", err)
	}
}

// set is helm's --set of each assignment.
func set(assignments ...string) helmchart.Flags {
	return helmchart.Flags{Set: assignments}
}
