package slogbridge_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/containerd/nri/internal/slogbridge"
	nrilog "github.com/containerd/nri/pkg/log"
)

// recorder is an NRI logger that keeps "level message" lines.
type recorder struct{ lines []string }

func (r *recorder) logf(level, format string, args ...interface{}) {
	r.lines = append(r.lines, level+" "+fmt.Sprintf(format, args...))
}
func (r *recorder) Debugf(_ context.Context, f string, a ...interface{}) { r.logf("debug", f, a...) }
func (r *recorder) Infof(_ context.Context, f string, a ...interface{})  { r.logf("info", f, a...) }
func (r *recorder) Warnf(_ context.Context, f string, a ...interface{})  { r.logf("warn", f, a...) }
func (r *recorder) Errorf(_ context.Context, f string, a ...interface{}) { r.logf("error", f, a...) }

func TestBridge(t *testing.T) {
	rec := &recorder{}
	log := slogbridge.New(func() nrilog.Logger { return rec })
	log.Debug("d")
	log.With("plugin", "10-x").Info("joined", "n", 1)
	log.WithGroup("pod").With("id", "p1").Warn("stale")
	log.Error("failed", "error", "boom")
	want := []string{"debug d", "info joined plugin=10-x n=1", "warn stale pod.id=p1", "error failed error=boom"}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Errorf("lines = %q, want %q", rec.lines, want)
	}
}
