// Package pluginops is the operability of a plugin command (nri-podnet,
// nri-cni): its -version and -health-address flags, and, with the latter,
// an HTTP server of /healthz, /readyz and /metrics (package health) whose
// readiness starts with the plugin's stub being connected to the runtime
// and configured now, and whose registry holds the Go runtime and process
// collectors and the plugin's own metrics.
package pluginops
