package log

import (
	"context"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// Logger is what NRI logs through.
type Logger interface {
	Debugf(ctx context.Context, format string, args ...interface{})
	Infof(ctx context.Context, format string, args ...interface{})
	Warnf(ctx context.Context, format string, args ...interface{})
	Errorf(ctx context.Context, format string, args ...interface{})
}

// current holds the Logger in use, wrapped so that atomic.Value always
// stores the same concrete type.
var current atomic.Value // of holder

type holder struct{ Logger }

// Set makes l the logger of NRI; nil restores the default (logrus).
func Set(l Logger) {
	if l == nil {
		l = logrusLogger{}
	}
	current.Store(holder{l})
}

// Get returns the logger of NRI.
func Get() Logger {
	if h, ok := current.Load().(holder); ok {
		return h.Logger
	}
	return logrusLogger{}
}

// Debugf logs a debug message through the logger of NRI.
func Debugf(ctx context.Context, format string, args ...interface{}) {
	Get().Debugf(ctx, format, args...)
}

// Infof logs an informational message through the logger of NRI.
func Infof(ctx context.Context, format string, args ...interface{}) {
	Get().Infof(ctx, format, args...)
}

// Warnf logs a warning through the logger of NRI.
func Warnf(ctx context.Context, format string, args ...interface{}) {
	Get().Warnf(ctx, format, args...)
}

// Errorf logs an error through the logger of NRI.
func Errorf(ctx context.Context, format string, args ...interface{}) {
	Get().Errorf(ctx, format, args...)
}

// logrusLogger logs to logrus's standard logger.
type logrusLogger struct{}

func (logrusLogger) Debugf(ctx context.Context, format string, args ...interface{}) {
	logrus.WithContext(ctx).Debugf(format, args...)
}

func (logrusLogger) Infof(ctx context.Context, format string, args ...interface{}) {
	logrus.WithContext(ctx).Infof(format, args...)
}

func (logrusLogger) Warnf(ctx context.Context, format string, args ...interface{}) {
	logrus.WithContext(ctx).Warnf(format, args...)
}

func (logrusLogger) Errorf(ctx context.Context, format string, args ...interface{}) {
	logrus.WithContext(ctx).Errorf(format, args...)
}
