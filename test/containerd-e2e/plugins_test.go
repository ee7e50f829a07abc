package containerde2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/test/containerd-e2e/internal/adjust"
)

// pluginTimeout bounds how long a plugin may take to be synchronized or
// to exit.
const pluginTimeout = 15 * time.Second

// pluginProc is an NRI plugin the test started as a separate process,
// connected to containerd's NRI socket.
type pluginProc = testutil.Proc

// startPlugin starts bin with args; containerd's cleanup stops it.
func (c *containerd) startPlugin(name, bin string, args ...string) *pluginProc {
	c.t.Helper()
	p, err := testutil.StartProc(name, bin, args...)
	if err != nil {
		c.t.Fatalf("plugin %s: %v", name, err)
	}
	c.plugins = append(c.plugins, p)
	return p
}

// waitLine waits until the plugin printed line, failing if it exits first
// or does not print it within pluginTimeout.
func (c *containerd) waitLine(p *pluginProc, line string) {
	c.t.Helper()
	p.WaitLine(c.t, line, pluginTimeout)
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
