package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Crictl runs crictl against one runtime's CRI socket, with a
// configuration file of its own, so that /etc/crictl.yaml is never read.
type Crictl struct {
	// Bin is the crictl binary.
	Bin string
	// Socket is the CRI socket.
	Socket string
	// Config is the crictl.yaml NewCrictl wrote.
	Config string
	// Timeout is crictl's --timeout.
	Timeout time.Duration
	// Name, if set, names the runtime or node in failures.
	Name string
}

// NewCrictl returns a Crictl for socket, with its configuration written
// to dir/crictl.yaml (tools such as critest read it from there too).
func NewCrictl(bin, socket, dir string, timeout time.Duration) (*Crictl, error) {
	c := &Crictl{Bin: bin, Socket: socket, Config: filepath.Join(dir, "crictl.yaml"), Timeout: timeout}
	conf := fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: %d\n", socket, socket, int(timeout.Seconds()))
	if err := os.WriteFile(c.Config, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs crictl with args and returns its standard output and error.
func (c *Crictl) Run(args ...string) (string, string, error) {
	ep := "unix://" + c.Socket
	cmd := exec.Command(c.Bin, append([]string{"--config", c.Config,
		"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", c.Timeout.String()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// Must runs crictl and fails t if it fails; it returns the standard
// output.
func (c *Crictl) Must(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, err := c.Run(args...)
	if err != nil {
		on := ""
		if c.Name != "" {
			on = " on " + c.Name
		}
		t.Fatalf("crictl %s%s: %v\n%s%s", strings.Join(args, " "), on, err, out, errOut)
	}
	return out
}
