package runtime_test

// Tests of the runtime's limits: object sizes, memory per pod, who may
// connect to the socket.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/runtime"
)

// TestLimits_OversizedObjectsRefusedAtTheDoor: a pod or container the
// runtime could never send to a plugin is refused by RunPodSandbox and
// CreateContainer with an error naming the size and the limit.
func TestLimits_OversizedObjectsRefusedAtTheDoor(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	e.startPlugin(rec, "10", "rec")
	huge := bigPod(1, 3<<20, 4096)
	_, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: huge})
	if !errors.Is(err, api.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(api.MaxObjectSize)) {
		t.Fatalf("RunPodSandbox of a 3 MiB pod = %v, want an error wrapping api.ErrTooLarge naming the limit", err)
	}
	pod := testPod(2)
	ctr := testContainer(pod, 1)
	ctr.Env = []string{"BIG=" + strings.Repeat("x", 3<<20)}
	_, err = e.rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if !errors.Is(err, api.ErrTooLarge) {
		t.Fatalf("CreateContainer of a 3 MiB container = %v, want api.ErrTooLarge", err)
	}
	if got := rec.seen(); len(got) != 0 {
		t.Errorf("plugin saw %v for refused objects", got)
	}
}

// TestLimits_NoMemoryPerPodEverCreated: creating and removing 50,000
// pods leaves the heap flat.
func TestLimits_NoMemoryPerPodEverCreated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cycle := func(from, to int) {
		for n := from; n < to; n++ {
			pod := testPod(n)
			if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.rt.PodSandboxStatus(ctx, pod, &api.PodNetworkRecord{}, false); err != nil {
				t.Fatal(err)
			}
			if err := e.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			if err := e.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle(0, 10_000)
	before := heapAfterGC()
	cycle(10_000, 50_000)
	after := heapAfterGC()
	// 40,000 pods at ~100 bytes each would be 4 MB.
	if after > before+1<<20 {
		t.Errorf("heap grew from %d to %d bytes over 40,000 pods created and removed", before, after)
	}
}

// TestLimits_SocketIsPrivateWhateverTheUmask: the NRI socket is 0600
// even when the process umask would leave it open to everyone.
func TestLimits_SocketIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri.sock")
	rt, err := runtime.New("test", "v1", runtime.WithSocketPath(sock), runtime.WithPluginPath(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode() & fs.ModePerm; perm != 0o600 {
		t.Errorf("socket mode = %v, want 0600", perm)
	}
}

// TestLimits_AllowedPluginUIDs: with WithAllowedPluginUIDs, a process
// of another user that can open the socket is turned away before it can
// register, and logged with its uid; root's plugins join.
func TestLimits_AllowedPluginUIDs(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	const nobody = 65534
	dir, err := os.MkdirTemp("", "nrinet-uid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "nri.sock")
	e := newEnvAt(t, sock, runtime.WithAllowedPluginUIDs(0))
	// Open the socket to everyone, as a careless administrator might.
	for _, p := range []string{dir, sock} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(probe)
	cmd.Env = []string{uidProbeEnv + "=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a plugin running as uid %d registered:\n%s", nobody, out)
	}
	if !strings.Contains(e.logs.String(), fmt.Sprintf("runs as uid %d", nobody)) {
		t.Errorf("the refused connection was not logged with its uid:\n%s", e.logs)
	}
	e.startPlugin(newRecorder(), "10", "root") // root may
}
