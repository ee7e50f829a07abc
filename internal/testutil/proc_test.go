package testutil_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

func TestProc(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		stopErr bool
	}{
		{name: "ends on SIGTERM", script: "echo ready; exec sleep 60"},
		{name: "ignores SIGTERM", script: "trap '' TERM; echo ready; while :; do sleep 1; done", stopErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testutil.StartProc("sh", "/bin/sh", "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			p.WaitLine(t, "ready", 10*time.Second)
			if !p.Running() {
				t.Fatal("not running after it printed ready")
			}
			err = p.Stop(200 * time.Millisecond)
			if (err != nil) != tc.stopErr {
				t.Errorf("Stop() = %v, want an error: %v", err, tc.stopErr)
			}
			if p.Running() || p.Cmd.ProcessState == nil {
				t.Error("still running after Stop")
			}
			if err := p.Stop(time.Second); err != nil {
				t.Errorf("Stop() of an exited process = %v", err)
			}
		})
	}
}

func TestCrictl(t *testing.T) {
	dir := t.TempDir()
	c, err := testutil.NewCrictl("/bin/echo", "/run/x.sock", dir, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(c.Config)
	if err != nil || !strings.Contains(string(conf), "runtime-endpoint: unix:///run/x.sock") {
		t.Errorf("crictl.yaml = %q, %v", conf, err)
	}
	out := c.Must(t, "pods", "-q")
	for _, want := range []string{"--config " + c.Config, "--runtime-endpoint unix:///run/x.sock", "--timeout 20s", "pods -q"} {
		if !strings.Contains(out, want) {
			t.Errorf("crictl ran with %q, want %q in it", out, want)
		}
	}
	c.Bin = "/bin/false"
	if _, _, err := c.Run("version"); err == nil {
		t.Error("Run of a failing crictl succeeded")
	}
}
