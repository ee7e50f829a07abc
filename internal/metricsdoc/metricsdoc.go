package metricsdoc

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/internal/mdtable"
)

// Metric is a row of the metrics table.
type Metric struct {
	Name     string
	ServedBy []string // commands: nrinetd, nri-podnet, nri-cni
	Type     string   // gauge, counter, histogram
	Labels   string
	Series   string // when the metric has series: "always", "configured", ...
	Meaning  string
}

// Alert is a row of the alerts table.
type Alert struct {
	Name     string
	Severity string
}

// Doc is what docs/metrics.md lists.
type Doc struct {
	Metrics []Metric
	Alerts  []Alert
}

// Metric returns the row of name, if there is one.
func (d Doc) Metric(name string) (Metric, bool) {
	i := slices.IndexFunc(d.Metrics, func(m Metric) bool { return m.Name == name })
	if i < 0 {
		return Metric{}, false
	}
	return d.Metrics[i], true
}

// ServedBy returns the rows of the metrics command serves.
func (d Doc) ServedBy(command string) []Metric {
	var out []Metric
	for _, m := range d.Metrics {
		if slices.Contains(m.ServedBy, command) {
			out = append(out, m)
		}
	}
	return out
}

// The headers of the two tables.
var (
	metricsHeader = []string{"metric", "served by", "type", "labels", "series", "meaning"}
	alertsHeader  = []string{"alert", "severity", "fires when"}
)

// Parse reads the metrics table and the alerts table of docs/metrics.md:
// the Markdown tables with those headers. A name is the first cell's
// text between backquotes.
func Parse(r io.Reader) (Doc, error) {
	var d Doc
	err := mdtable.Scan(r, func(l mdtable.Line) error {
		cells := l.Cells
		switch {
		case slices.Equal(l.Header, metricsHeader):
			if len(cells) != len(metricsHeader) {
				return fmt.Errorf("metricsdoc: line %d: %d cells, want %d", l.Num, len(cells), len(metricsHeader))
			}
			name, err := code(cells[0])
			if err != nil {
				return fmt.Errorf("metricsdoc: line %d: %w", l.Num, err)
			}
			var served []string
			for _, c := range strings.Split(cells[1], ",") {
				served = append(served, strings.TrimSpace(c))
			}
			d.Metrics = append(d.Metrics, Metric{Name: name, ServedBy: served, Type: cells[2], Labels: cells[3], Series: cells[4], Meaning: cells[5]})
		case slices.Equal(l.Header, alertsHeader):
			name, err := code(cells[0])
			if err != nil {
				return fmt.Errorf("metricsdoc: line %d: %w", l.Num, err)
			}
			d.Alerts = append(d.Alerts, Alert{Name: name, Severity: cells[1]})
		}
		return nil
	})
	if err != nil {
		return Doc{}, err
	}
	if len(d.Metrics) == 0 {
		return Doc{}, fmt.Errorf("metricsdoc: no table with the header %q", strings.Join(metricsHeader, " | "))
	}
	return d, nil
}

// code returns the text between the backquotes of a cell.
func code(cell string) (string, error) {
	if len(cell) < 3 || cell[0] != '`' || cell[len(cell)-1] != '`' || strings.Count(cell, "`") != 2 {
		return "", fmt.Errorf("first cell %q: want one name in backquotes", cell)
	}
	return cell[1 : len(cell)-1], nil
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// Names returns the metric names of nrinet's (those starting with
// "nrinet_" or "promhttp_") that the PromQL expression expr uses, each
// once, in order, with the _bucket, _count or _sum of a histogram's series
// kept. Quoted strings (label values) are skipped.
func Names(expr string) []string {
	var out []string
	for _, id := range identifier.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
		if (strings.HasPrefix(id, "nrinet_") || strings.HasPrefix(id, "promhttp_")) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Documented reports whether the series name (e.g.
// "nrinet_podnet_setup_duration_seconds_bucket") is a metric of the
// table: its name, or a histogram's with _bucket, _count or _sum.
func (d Doc) Documented(name string) bool {
	if _, ok := d.Metric(name); ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := d.Metric(base); ok && m.Type == "histogram" {
				return true
			}
		}
	}
	return false
}
