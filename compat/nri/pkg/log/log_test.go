package log_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/containerd/nri/pkg/log"
)

// recorder is a Logger that keeps what it is given.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) add(level, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, level+" "+fmt.Sprintf(format, args...))
}

func (r *recorder) Debugf(_ context.Context, f string, a ...interface{}) { r.add("debug", f, a...) }
func (r *recorder) Infof(_ context.Context, f string, a ...interface{})  { r.add("info", f, a...) }
func (r *recorder) Warnf(_ context.Context, f string, a ...interface{})  { r.add("warn", f, a...) }
func (r *recorder) Errorf(_ context.Context, f string, a ...interface{}) { r.add("error", f, a...) }

// The tests below change the process-wide logger, so they do not run in
// parallel; each restores the default.

func TestSet(t *testing.T) {
	t.Cleanup(func() { log.Set(nil) })
	r := &recorder{}
	log.Set(r)
	if log.Get() != log.Logger(r) {
		t.Fatalf("Get() = %v, want the logger set", log.Get())
	}
	ctx := context.Background()
	log.Debugf(ctx, "d %d", 1)
	log.Infof(ctx, "i %s", "x")
	log.Warnf(ctx, "w")
	log.Errorf(ctx, "e %v", fmt.Errorf("boom"))
	want := []string{"debug d 1", "info i x", "warn w", "error e boom"}
	if strings.Join(r.lines, "|") != strings.Join(want, "|") {
		t.Errorf("logged %q, want %q", r.lines, want)
	}
}

func TestDefaultIsLogrus(t *testing.T) {
	t.Cleanup(func() { log.Set(nil) })
	var buf bytes.Buffer
	out, level := logrus.StandardLogger().Out, logrus.GetLevel()
	logrus.SetOutput(&buf)
	logrus.SetLevel(logrus.InfoLevel)
	t.Cleanup(func() { logrus.SetOutput(out); logrus.SetLevel(level) })

	log.Set(&recorder{})
	log.Set(nil) // back to the default
	log.Infof(context.Background(), "hello %s", "logrus")
	log.Debugf(context.Background(), "not at info level")
	if got := buf.String(); !strings.Contains(got, "hello logrus") || strings.Contains(got, "not at info level") {
		t.Errorf("logrus got %q", got)
	}
}

func TestSetConcurrent(t *testing.T) {
	t.Cleanup(func() { log.Set(nil) })
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := &recorder{}
			for range 100 {
				log.Set(r)
				log.Infof(context.Background(), "%d", i)
			}
		})
	}
	wg.Wait()
}
