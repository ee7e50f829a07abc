package metricsdoc_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/metricsdoc"
)

const sample = "# Metrics\n\n" +
	"| metric | served by | type | labels | series | meaning |\n" +
	"|---|---|---|---|---|---|\n" +
	"| `nrinet_build_info` | nrinetd, nri-cni | gauge | `command` | always | 1 |\n" +
	"| `nrinet_cni_setup_duration_seconds` | nri-cni | histogram | | always | setup |\n" +
	"\n| alert | severity | fires when |\n|---|---|---|\n" +
	"| `NrinetDown` | critical | down |\n"

func TestParse(t *testing.T) {
	d, err := metricsdoc.Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Metrics) != 2 || len(d.Alerts) != 1 || d.Alerts[0] != (metricsdoc.Alert{Name: "NrinetDown", Severity: "critical"}) {
		t.Fatalf("Parse: %+v", d)
	}
	m, ok := d.Metric("nrinet_build_info")
	if !ok || !slices.Equal(m.ServedBy, []string{"nrinetd", "nri-cni"}) || m.Type != "gauge" || m.Series != "always" {
		t.Errorf("nrinet_build_info: %+v, %v", m, ok)
	}
	if got := len(d.ServedBy("nri-cni")); got != 2 {
		t.Errorf("ServedBy(nri-cni): %d rows, want 2", got)
	}
	for name, want := range map[string]bool{
		"nrinet_cni_setup_duration_seconds_bucket": true,
		"nrinet_cni_setup_duration_seconds_count":  true,
		"nrinet_build_info":                        true,
		"nrinet_build_info_count":                  false, // not a histogram
		"nrinet_cni_errors_total":                  false,
	} {
		if got := d.Documented(name); got != want {
			t.Errorf("Documented(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestParse_Errors(t *testing.T) {
	for name, doc := range map[string]string{
		"no table":       "# Metrics\n",
		"name not code":  "| metric | served by | type | labels | series | meaning |\n|---|---|---|---|---|---|\n| nrinet_x | nrinetd | gauge | | always | x |\n",
		"missing a cell": "| metric | served by | type | labels | series | meaning |\n|---|---|---|---|---|---|\n| `nrinet_x` | nrinetd | gauge | always | x |\n",
	} {
		if _, err := metricsdoc.Parse(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: Parse succeeded", name)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job=~".*(nrinet|nri-podnet).*"} == 0`, nil},
		{`histogram_quantile(0.99, sum by (le) (rate(nrinet_podnet_setup_duration_seconds_bucket{instance=~"$instance"}[5m])))`,
			[]string{"nrinet_podnet_setup_duration_seconds_bucket"}},
		{`nrinet_podnet_addresses_free / (nrinet_podnet_addresses_free + nrinet_podnet_addresses_in_use{subnet="nrinet_not_a_name"}) < 0.1`,
			[]string{"nrinet_podnet_addresses_free", "nrinet_podnet_addresses_in_use"}},
		{`rate(promhttp_metric_handler_errors_total[5m])`, []string{"promhttp_metric_handler_errors_total"}},
	} {
		if got := metricsdoc.Names(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("Names(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// The repository's own docs/metrics.md parses, with rows for all three
// commands.
func TestParse_Repository(t *testing.T) {
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := metricsdoc.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"nrinetd", "nri-podnet", "nri-cni"} {
		if len(d.ServedBy(c)) == 0 {
			t.Errorf("docs/metrics.md: no metric of %s", c)
		}
	}
	if len(d.Alerts) == 0 {
		t.Error("docs/metrics.md: no alerts")
	}
}
