// Package pluginops is what the plugin commands (nri-podnet, nri-cni) do
// alike, on top of what every command does (package cli): the flags they
// share (AddFlags: -name, -idx, -version, -http-address, the logging
// flags of package logflags), the command line read the same way
// (Ops.Parse), the plugin's name and index by one rule (Ops.Identity),
// their exit statuses (Main: cli's 2 and 1, and 3 for a runtime refused
// for want of the pod network extension), and their operability: with
// -http-address, an HTTP server of /healthz, /readyz and /metrics
// (package health) whose readiness starts with the plugin's stub being
// connected to the runtime and configured now, and whose registry holds
// the Go runtime and process collectors and the plugin's own metrics.
package pluginops
