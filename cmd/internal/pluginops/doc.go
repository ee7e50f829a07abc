// Package pluginops is what the plugin commands (nri-podnet, nri-cni) do
// alike: their exit statuses (Main: 2 for usage and configuration errors,
// 3 for a runtime refused for want of the pod network extension, 1
// otherwise), the command line read the same way (Ops.Parse: stray
// arguments refused, -version, the logger), the plugin's name and index by one
// rule (Identity), the logging flags (package logflags), and their
// operability: -version and -health-address, and, with the latter,
// an HTTP server of /healthz, /readyz and /metrics (package health) whose
// readiness starts with the plugin's stub being connected to the runtime
// and configured now, and whose registry holds the Go runtime and process
// collectors and the plugin's own metrics.
package pluginops
