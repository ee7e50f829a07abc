// Package metricsdoc reads docs/metrics.md, the operators' table of every
// metric nrinet's commands serve and of the alerts in deploy/monitoring,
// so that tests can hold the binaries, the dashboard and the rules to it:
// test/e2e (TestMetrics_Documented) scrapes the real binaries, deploy
// (TestMonitoring_*) checks the dashboard's and the rules' queries.
//
// [Parse] reads the two tables; [Names] finds the metric names a PromQL
// expression uses.
package metricsdoc
