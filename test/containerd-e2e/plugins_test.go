package containerde2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/test/containerd-e2e/internal/adjust"
)

// pluginTimeout bounds how long a plugin may take to be synchronized or
// to exit.
const pluginTimeout = 15 * time.Second

// pluginProc is an NRI plugin the test started as a separate process,
// connected to containerd's NRI socket.
type pluginProc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr *testutil.LogBuffer
	exited         chan struct{}
}

// startPlugin starts bin with args; containerd's cleanup stops it.
func (c *containerd) startPlugin(name, bin string, args ...string) *pluginProc {
	c.t.Helper()
	p := &pluginProc{name: name, stdout: &testutil.LogBuffer{}, stderr: &testutil.LogBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("plugin %s: %v", name, err)
	}
	c.plugins = append(c.plugins, p)
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	return p
}

// lines returns the plugin's standard output, line by line.
func (p *pluginProc) lines() []string { return strings.Split(p.stdout.String(), "\n") }

// waitLine waits until the plugin printed line, failing if it exits first
// or does not print it within pluginTimeout.
func (c *containerd) waitLine(p *pluginProc, line string) {
	c.t.Helper()
	deadline := time.Now().Add(pluginTimeout)
	for !slices.Contains(p.lines(), line) {
		select {
		case <-p.exited:
			c.t.Fatalf("plugin %s exited (%v) before printing %q\nstderr:\n%s", p.name, p.cmd.ProcessState, line, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("plugin %s did not print %q within %v\nstdout:\n%s\nstderr:\n%s", p.name, line, pluginTimeout, p.stdout, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits up to pluginTimeout for the plugin to exit and reports
// whether it did.
func (p *pluginProc) waitExit() bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(pluginTimeout):
		return false
	}
}

// stop ends the plugin: SIGTERM, then SIGKILL after pluginTimeout.
func (p *pluginProc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.waitExit() {
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// adjusterSpec is what an adjuster plugin does to the containers named
// container: an environment variable, an annotation, a read-only bind
// mount of a directory holding a file "token" under c.dir, and a memory
// limit, all with values unique to the plugin and the instance.
func (c *containerd) adjusterSpec(name, idx, container string, memory int64) adjust.Spec {
	c.t.Helper()
	src := filepath.Join(c.dir, "mount-"+name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "token"), []byte(name+" "+c.token+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return adjust.Spec{
		Socket: c.nriSock, Name: name, Idx: idx, Container: container,
		EnvKey: "NRINET_E2E_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")), EnvValue: c.token,
		AnnotationKey: "nrinet.e2e/" + name, AnnotationValue: c.token,
		MountSource: src, MountDestination: "/nrinet-e2e",
		MemoryLimit: memory,
	}
}

// startAdjuster starts an adjuster plugin and waits until containerd has
// synchronized it.
func (c *containerd) startAdjuster(bin string, spec adjust.Spec) *pluginProc {
	c.t.Helper()
	p := c.startPlugin(fmt.Sprintf("%s-%s", spec.Idx, spec.Name), bin, spec.Args()...)
	c.waitLine(p, adjust.Synchronized)
	return p
}
