// Package log is the logger of upstream NRI's runtime-side packages: a
// small [Logger] interface, package-level [Debugf], [Infof], [Warnf] and
// [Errorf], and [Set] to route them to the runtime's own logger (containerd
// sets one backed by its log.G(ctx)). Until Set is called, messages go to
// logrus's standard logger with the context attached, as upstream.
//
// The logger is process-wide, as upstream's: nrinet's own packages take a
// *slog.Logger per instance instead. Set and Get are safe for concurrent
// use (upstream's are not).
package log
