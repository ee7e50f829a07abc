package ttrpclog_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/containerd/log"
	"github.com/sirupsen/logrus"

	"github.com/nrinet/nrinet/internal/ttrpclog"
)

func TestRoute(t *testing.T) {
	var buf bytes.Buffer
	ttrpclog.Route(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	log.L.WithField("stream", 7).Error("ttrpc: received message on inactive stream")
	log.L.WithField("conn", "x").Warn("ttrpc: something else")
	out := buf.String()
	if strings.Contains(out, "inactive stream") {
		t.Errorf("the answer to an abandoned call was logged above debug:\n%s", out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "ttrpc: something else") || !strings.Contains(out, "conn=x") || !strings.Contains(out, "component=ttrpc") {
		t.Errorf("a ttrpc warning did not reach slog with its fields:\n%s", out)
	}
}

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		in   logrus.Level
		msg  string
		want slog.Level
	}{
		{logrus.ErrorLevel, "boom", slog.LevelError},
		{logrus.ErrorLevel, "ttrpc: received message on inactive stream", slog.LevelDebug},
		{logrus.WarnLevel, "w", slog.LevelWarn},
		{logrus.InfoLevel, "i", slog.LevelInfo},
		{logrus.TraceLevel, "t", slog.LevelDebug},
	} {
		if got := ttrpclog.Level(tc.in, tc.msg); got != tc.want {
			t.Errorf("Level(%v, %q) = %v, want %v", tc.in, tc.msg, got, tc.want)
		}
	}
}
