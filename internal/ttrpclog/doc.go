// Package ttrpclog routes what ttrpc logs, through containerd/log's
// process-wide logrus logger, into a command's slog.Logger, so that a
// daemon has one log stream with one format. ttrpc's complaint about an
// answer arriving for a call the caller gave up on ("received message on
// inactive stream"), which every late plugin answer causes, is logged at
// debug level: the runtime already reported the call as late.
//
// Only commands call Route, once, at start: the logrus logger it changes
// is process-global.
package ttrpclog
