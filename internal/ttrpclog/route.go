package ttrpclog

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/sirupsen/logrus"
)

// Route sends every record of the standard logrus logger (which
// containerd/log, and so ttrpc, writes to) to l instead of standard error.
func Route(l *slog.Logger) {
	std := logrus.StandardLogger()
	std.SetOutput(io.Discard)
	std.SetLevel(logrus.DebugLevel)
	std.ReplaceHooks(logrus.LevelHooks{})
	std.AddHook(hook{l: l})
}

// hook forwards logrus entries to slog.
type hook struct{ l *slog.Logger }

func (hook) Levels() []logrus.Level { return logrus.AllLevels }

func (h hook) Fire(e *logrus.Entry) error {
	level := Level(e.Level, e.Message)
	if !h.l.Enabled(context.Background(), level) {
		return nil
	}
	attrs := make([]any, 0, 2+2*len(e.Data))
	attrs = append(attrs, "component", "ttrpc")
	for k, v := range e.Data {
		attrs = append(attrs, k, v)
	}
	h.l.Log(context.Background(), level, e.Message, attrs...)
	return nil
}

// Level maps a logrus level to slog's, demoting ttrpc's report of an
// answer to an abandoned call to debug.
func Level(l logrus.Level, msg string) slog.Level {
	if strings.Contains(msg, "received message on inactive stream") {
		return slog.LevelDebug
	}
	switch l {
	case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
		return slog.LevelError
	case logrus.WarnLevel:
		return slog.LevelWarn
	case logrus.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
