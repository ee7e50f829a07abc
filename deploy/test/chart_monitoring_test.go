package deploytest

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// monitoringDir holds the monitoring files the chart's monitoring objects
// must equal (docs/metrics.md, "Dashboard and alerts").
const monitoringDir = "../monitoring"

// chartFiles are the files of deploy/monitoring the chart holds copies
// of, in its files/, byte for byte: what its templates include as they
// are (.Files.Get).
var chartFiles = []string{"rules.yaml", "nrinet-dashboard.json"}

// The chart's monitoring objects, by "kind namespace/name".
const (
	podMonitorKey     = "PodMonitor nrinet-system/nrinet"
	prometheusRuleKey = "PrometheusRule nrinet-system/nrinet"
	dashboardKey      = "ConfigMap nrinet-system/nrinet-dashboard"
)

// TestChart_Monitoring renders the chart with each of the values
// monitoring.podMonitor, monitoring.rules and monitoring.dashboard on, all
// of them, and none (the default): each value adds exactly its object,
// and changes none of the others; the PodMonitor and the PrometheusRule
// are deploy/monitoring's podmonitor.yaml and prometheusrule.yaml, and
// decode strictly into the Prometheus Operator's types; the dashboard's
// ConfigMap, labelled for Grafana's sidecar, holds
// deploy/monitoring/nrinet-dashboard.json byte for byte. With all on, the
// chart lints clean.
func TestChart_Monitoring(t *testing.T) {
	base := renderRaw(t, nil)
	for _, tc := range []struct {
		name string
		set  []string
		want []string // the objects added
	}{
		{"none", []string{"monitoring.podMonitor=false", "monitoring.rules=false", "monitoring.dashboard=false"}, nil},
		{"podMonitor", []string{"monitoring.podMonitor=true"}, []string{podMonitorKey}},
		{"rules", []string{"monitoring.rules=true"}, []string{prometheusRuleKey}},
		{"dashboard", []string{"monitoring.dashboard=true"}, []string{dashboardKey}},
		{
			"all", []string{"monitoring.podMonitor=true", "monitoring.rules=true", "monitoring.dashboard=true"},
			[]string{podMonitorKey, prometheusRuleKey, dashboardKey},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := helmchart.Values(helmchart.Flags{Set: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			got := renderRaw(t, vals)
			var added []string
			for key, obj := range got {
				b, ok := base[key]
				if !ok {
					added = append(added, key)
					continue
				}
				if d := cmp.Diff(b, obj); d != "" {
					t.Errorf("%s differs from the default values' (-) with %s (+):\n%s", key, tc.set, d)
				}
			}
			for key := range base {
				if _, ok := got[key]; !ok {
					t.Errorf("%s is gone with %s", key, tc.set)
				}
			}
			slices.Sort(added)
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(added, want) {
				t.Errorf("with %s the chart adds %q, want %q", tc.set, added, want)
			}
			for _, key := range added {
				checkMonitoringObject(t, key, got[key])
			}
			if tc.name != "all" {
				return
			}
			msgs, err := helmchart.Lint(chartDir, vals)
			if err != nil && len(msgs) == 0 {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Error() != "[INFO] Chart.yaml: icon is recommended" {
					t.Errorf("lint: %v", m)
				}
			}
		})
	}
}

// checkMonitoringObject checks one of the chart's monitoring objects
// against deploy/monitoring's file.
func checkMonitoringObject(t *testing.T, key string, obj map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	switch key {
	case podMonitorKey, prometheusRuleKey:
		file, into := "podmonitor.yaml", any(&monitoringv1.PodMonitor{})
		if key == prometheusRuleKey {
			file, into = "prometheusrule.yaml", &monitoringv1.PrometheusRule{}
		}
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			t.Errorf("%s does not decode strictly into the Prometheus Operator's %T: %v", key, into, err)
		}
		want := readRaw(t, filepath.Join(monitoringDir, file))
		if d := cmp.Diff(want, obj); d != "" {
			t.Errorf("%s: the chart's (+) differs from %s (-):\n%s", key, file, d)
		}
	case dashboardKey:
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(b, &cm); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if cm.Labels["grafana_dashboard"] != "1" || cm.Labels["app.kubernetes.io/part-of"] != "nrinet" {
			t.Errorf("%s: labels %v, want grafana_dashboard: \"1\" (Grafana's sidecar) and app.kubernetes.io/part-of: nrinet", key, cm.Labels)
		}
		want, err := os.ReadFile(filepath.Join(monitoringDir, "nrinet-dashboard.json"))
		if err != nil {
			t.Fatal(err)
		}
		if keys := slices.Sorted(maps.Keys(cm.Data)); !slices.Equal(keys, []string{"nrinet-dashboard.json"}) || len(cm.BinaryData) != 0 {
			t.Errorf("%s: data keys %q, binaryData %d; want nrinet-dashboard.json only", key, keys, len(cm.BinaryData))
		}
		if got := cm.Data["nrinet-dashboard.json"]; got != string(want) {
			t.Errorf("%s: nrinet-dashboard.json is not deploy/monitoring's byte for byte (%d bytes, want %d)", key, len(got), len(want))
		}
	default:
		t.Errorf("%s: not a monitoring object", key)
	}
}

// TestChart_MonitoringFiles: the chart's files/ are deploy/monitoring's
// files, byte for byte (deploy/monitoring's are the ones edited, then
// copied; docs/metrics.md).
func TestChart_MonitoringFiles(t *testing.T) {
	for _, f := range chartFiles {
		want, err := os.ReadFile(filepath.Join(monitoringDir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "files", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/helm/nrinet/files/%s differs from deploy/monitoring/%[1]s: cp deploy/monitoring/%[1]s deploy/helm/nrinet/files/", f)
		}
	}
}

// renderRaw renders the chart with vals and returns its objects, decoded
// as YAML only, by "kind namespace/name".
func renderRaw(t *testing.T, vals map[string]any) map[string]map[string]any {
	t.Helper()
	manifest, err := helmchart.Render(context.Background(), chartDir, vals)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]any{}
	for _, doc := range splitYAML(manifest) {
		obj := unmarshalRaw(t, "the chart", doc)
		key := objectKey(obj)
		if _, ok := m[key]; ok {
			t.Errorf("the chart makes %s twice", key)
		}
		m[key] = obj
	}
	return m
}

// readRaw reads the one object of a YAML file.
func readRaw(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return unmarshalRaw(t, file, b)
}

// unmarshalRaw decodes one YAML document of an object.
func unmarshalRaw(t *testing.T, where string, doc []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		t.Fatalf("%s: %v\n%s", where, err, doc)
	}
	if obj == nil {
		t.Fatalf("%s: no object in\n%s", where, doc)
	}
	return obj
}

// objectKey is an object's "kind namespace/name".
func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	kind, _ := obj["kind"].(string)
	return kind + " " + strings.TrimSpace(ns) + "/" + name
}
