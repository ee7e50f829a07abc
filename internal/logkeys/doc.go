// Package logkeys has no code: its test checks that the log lines of
// nrinetd (cri), the runtime and plugin libraries and the plugins name a
// pod with the same keys everywhere (docs/metrics.md, "Log keys"): "pod"
// holds its namespace/name, "sandbox" its ID.
package logkeys
