package kubee2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recordingTB records Errorf's messages instead of failing.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestReportShims checks that a process looking like the node's shim is
// reported with its sandbox and the containerd lines naming it, and
// killed, and that another containerd's shim is left alone. It needs no
// cluster: the shims are shells named containerd-shim-runc-v2.
func TestReportShims(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "c.sock")
	start := func(id, address string) *exec.Cmd {
		// A shell waiting on its standard input, which nothing writes:
		// one process, with the shim's name and arguments.
		cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"containerd-shim-runc-v2", "-c", "read x", "-namespace", "k8s.io", "-id", id, "-address", address}}
		if _, err := cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	ours := start("abc123", sock)
	other := start("def456", sock+".other")

	log := &logBuffer{}
	fmt.Fprintln(log, `level=info msg="RunPodSandbox for name:\"p\" returns sandbox id \"abc123\""`)
	fmt.Fprintln(log, `level=info msg="unrelated"`)
	fmt.Fprintln(log, `level=info msg="StopPodSandbox for \"abc123\" returns successfully"`)
	rec := &recordingTB{TB: t}
	n := &kubeNode{t: rec, name: "a", sock: sock, containerd: &proc{name: "containerd", log: log}}
	n.reportShims()

	if len(rec.errs) != 1 {
		t.Fatalf("%d errors, want 1: %q", len(rec.errs), rec.errs)
	}
	msg := rec.errs[0]
	for _, want := range []string{fmt.Sprintf("pid %d", ours.Process.Pid), "sandbox abc123", "2 last lines", "returns sandbox id", "StopPodSandbox"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "unrelated") {
		t.Errorf("the report has a line not naming the sandbox:\n%s", msg)
	}
	if err := ours.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the node's shim: %v, want killed", err)
	}
	if got := nodeShims(sock + ".other"); len(got) != 1 || got[0].pid != other.Process.Pid || got[0].id != "def456" {
		t.Errorf("the other containerd's shims: %+v, want pid %d, id def456", got, other.Process.Pid)
	}
}
