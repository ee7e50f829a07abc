package deploy

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nrinet/nrinet/internal/metricsdoc"
)

// readMetricsDoc parses docs/metrics.md.
func readMetricsDoc(t *testing.T) metricsdoc.Doc {
	t.Helper()
	f, err := os.Open("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := metricsdoc.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// readYAML decodes file into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// ruleFile is a Prometheus rule file, as far as the tests read it.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert  string            `yaml:"alert"`
			Expr   string            `yaml:"expr"`
			For    string            `yaml:"for"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestMonitoring_RulesMatch: monitoring/prometheusrule.yaml is a
// PrometheusRule in the DaemonSet's namespace whose spec is
// monitoring/rules.yaml, the file promtool checks and tests.
func TestMonitoring_RulesMatch(t *testing.T) {
	var rules, pr map[string]any
	readYAML(t, "monitoring/rules.yaml", &rules)
	readYAML(t, "monitoring/prometheusrule.yaml", &pr)
	var ns struct {
		Metadata struct{ Name string } `yaml:"metadata"`
	}
	readYAML(t, "base/namespace.yaml", &ns)
	meta, _ := pr["metadata"].(map[string]any)
	if pr["apiVersion"] != "monitoring.coreos.com/v1" || pr["kind"] != "PrometheusRule" || meta["namespace"] != ns.Metadata.Name {
		t.Errorf("prometheusrule.yaml: apiVersion %v, kind %v, namespace %v; want monitoring.coreos.com/v1, PrometheusRule, %s",
			pr["apiVersion"], pr["kind"], meta["namespace"], ns.Metadata.Name)
	}
	if !reflect.DeepEqual(pr["spec"], rules) {
		got, _ := yaml.Marshal(pr["spec"])
		want, _ := yaml.Marshal(rules)
		t.Errorf("prometheusrule.yaml's spec differs from rules.yaml:\n--- spec\n%s--- rules.yaml\n%s", got, want)
	}
}

// TestMonitoring_Alerts: the alerts of rules.yaml are the rows of
// docs/metrics.md's alerts table, with the same severities; their
// queries use only metrics of the metrics table; and rules_test.yaml has,
// for each, a case where it fires and one where it stays silent.
func TestMonitoring_Alerts(t *testing.T) {
	doc := readMetricsDoc(t)
	var rf ruleFile
	readYAML(t, "monitoring/rules.yaml", &rf)
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			i := slices.IndexFunc(doc.Alerts, func(a metricsdoc.Alert) bool { return a.Name == r.Alert })
			switch {
			case r.Alert == "":
				t.Errorf("group %s: a rule that is not an alert: %s", g.Name, r.Expr)
			case i < 0:
				t.Errorf("alert %s is not in docs/metrics.md's alerts table", r.Alert)
			case doc.Alerts[i].Severity != r.Labels["severity"]:
				t.Errorf("alert %s: severity %q, docs/metrics.md says %q", r.Alert, r.Labels["severity"], doc.Alerts[i].Severity)
			}
			for _, n := range metricsdoc.Names(r.Expr) {
				if !doc.Documented(n) {
					t.Errorf("alert %s uses %s, which docs/metrics.md does not list", r.Alert, n)
				}
			}
		}
	}
	for _, a := range doc.Alerts {
		if !slices.Contains(alerts, a.Name) {
			t.Errorf("docs/metrics.md lists alert %s, which rules.yaml does not have", a.Name)
		}
	}

	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, "monitoring/rules_test.yaml", &tests)
	if !slices.Equal(tests.RuleFiles, []string{"rules.yaml"}) {
		t.Errorf("rules_test.yaml: rule_files %q, want [rules.yaml]", tests.RuleFiles)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] || !silent[a] {
			t.Errorf("rules_test.yaml: alert %s: a case where it fires %v, one where it is silent %v; want both", a, fires[a], silent[a])
		}
	}
}

// TestMonitoring_Dashboard: the Grafana dashboard is valid JSON; every
// panel but the rows queries the dashboard's data source and has queries;
// every metric its queries and variables name is in docs/metrics.md.
func TestMonitoring_Dashboard(t *testing.T) {
	doc := readMetricsDoc(t)
	b, err := os.ReadFile("monitoring/nrinet-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var dash struct {
		UID        string  `json:"uid"`
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("nrinet-dashboard.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("nrinet-dashboard.json: uid %q, title %q", dash.UID, dash.Title)
	}
	exprs := map[string]string{} // expression: where
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("panel %q: data source %q, %d queries; want ${datasource} and some", p.Title, p.Datasource.UID, len(p.Targets))
			}
			for _, tg := range p.Targets {
				exprs[tg.Expr] = "panel " + p.Title
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		exprs[v.Definition] = "variable " + v.Name
	}
	names := 0
	for expr, where := range exprs {
		for _, n := range metricsdoc.Names(expr) {
			names++
			if !doc.Documented(n) {
				t.Errorf("%s: %s is not in docs/metrics.md (%s)", where, n, expr)
			}
		}
	}
	if names == 0 {
		t.Error("nrinet-dashboard.json names no metric")
	}
}

// TestMonitoring_PodMonitor: the PodMonitor selects the DaemonSet's pods
// by a label their template has, in their namespace, on a port the
// container has.
func TestMonitoring_PodMonitor(t *testing.T) {
	var pm struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"podMetricsEndpoints"`
		} `yaml:"spec"`
	}
	readYAML(t, "monitoring/podmonitor.yaml", &pm)
	var ds struct {
		Metadata struct {
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec struct {
					Containers []struct {
						Ports []struct {
							Name string `yaml:"name"`
						} `yaml:"ports"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, "base/daemonset.yaml", &ds)
	if pm.Kind != "PodMonitor" || pm.Metadata.Namespace != ds.Metadata.Namespace {
		t.Errorf("podmonitor.yaml: kind %q in %q; want PodMonitor in %q", pm.Kind, pm.Metadata.Namespace, ds.Metadata.Namespace)
	}
	if len(pm.Spec.Selector.MatchLabels) == 0 {
		t.Error("podmonitor.yaml: no matchLabels")
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("podmonitor.yaml selects %s=%s; the DaemonSet's pods have %q", k, v, ds.Spec.Template.Metadata.Labels[k])
		}
	}
	var ports []string
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			ports = append(ports, p.Name)
		}
	}
	if len(pm.Spec.Endpoints) != 1 || !slices.Contains(ports, pm.Spec.Endpoints[0].Port) || pm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("podmonitor.yaml endpoints %+v; the DaemonSet's ports %q", pm.Spec.Endpoints, ports)
	}
	// Its targets' job label, namespace/name, is one NrinetMetricsDown
	// watches.
	var rf ruleFile
	readYAML(t, "monitoring/rules.yaml", &rf)
	job := pm.Metadata.Namespace + "/" + pm.Metadata.Name
	matched := false
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "NrinetMetricsDown" {
				continue
			}
			m := regexp.MustCompile(`job=~"([^"]*)"`).FindStringSubmatch(r.Expr)
			if m == nil {
				t.Fatalf("NrinetMetricsDown: no job=~ matcher in %s", r.Expr)
			}
			matched = regexp.MustCompile("^(?:" + m[1] + ")$").MatchString(job)
		}
	}
	if !matched {
		t.Errorf("podmonitor.yaml: job %q is not one NrinetMetricsDown watches", job)
	}
}
