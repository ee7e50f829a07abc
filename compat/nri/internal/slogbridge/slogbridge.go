// Package slogbridge is the slog.Handler through which nrinet's runtime
// and plugin libraries log inside compat/nri: it formats a record as
// "message key=value ..." and hands it to an NRI logger (pkg/log's
// Logger) at the record's level. The adaptation logs where pkg/log logs
// (which containerd directs); the stub to the stub's logger.
package slogbridge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	nrilog "github.com/containerd/nri/pkg/log"
)

// New returns a logger whose records go to the NRI logger to returns at
// the time of each record.
func New(to func() nrilog.Logger) *slog.Logger { return slog.New(&handler{to: to}) }

type handler struct {
	to    func() nrilog.Logger
	attrs []slog.Attr
	group string
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
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
	msg, to := b.String(), h.to()
	switch {
	case rec.Level >= slog.LevelError:
		to.Errorf(ctx, "%s", msg)
	case rec.Level >= slog.LevelWarn:
		to.Warnf(ctx, "%s", msg)
	case rec.Level >= slog.LevelInfo:
		to.Infof(ctx, "%s", msg)
	default:
		to.Debugf(ctx, "%s", msg)
	}
	return nil
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{to: h.to, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...), group: h.group}
}

func (h *handler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &handler{to: h.to, attrs: h.attrs, group: g}
}
