package stub

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	nrilog "github.com/containerd/nri/pkg/log"
)

// logHandler is the slog.Handler nrinet's plugin stub logs through: it
// formats a record as "message key=value ..." and hands it to an NRI
// logger at the record's level.
type logHandler struct {
	to    nrilog.Logger
	attrs []slog.Attr
	group string
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	write := func(a slog.Attr) {
		if h.group != "" {
			fmt.Fprintf(&b, " %s.%s=%v", h.group, a.Key, a.Value)
		} else {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
	}
	for _, a := range h.attrs {
		write(a)
	}
	rec.Attrs(func(a slog.Attr) bool {
		write(a)
		return true
	})
	msg := b.String()
	switch {
	case rec.Level >= slog.LevelError:
		h.to.Errorf(ctx, "%s", msg)
	case rec.Level >= slog.LevelWarn:
		h.to.Warnf(ctx, "%s", msg)
	case rec.Level >= slog.LevelInfo:
		h.to.Infof(ctx, "%s", msg)
	default:
		h.to.Debugf(ctx, "%s", msg)
	}
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{to: h.to, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...), group: h.group}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &logHandler{to: h.to, attrs: h.attrs, group: g}
}
