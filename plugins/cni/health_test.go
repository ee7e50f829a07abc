package cni_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
)

// TestNRICNI_HealthAddress: nri-cni started by hand with -health-address
// serves /healthz at once and /readyz 503 while it waits for its CNI
// network; once the network is written it joins the runtime and /readyz
// is 200; a pod attached through the runtime shows in /metrics; when the
// runtime goes away /readyz is 503 again.
func TestNRICNI_HealthAddress(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	dir, err := os.MkdirTemp("", "nrcni-health-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nri.sock")
	tn := newTestNet(t, "1.1.0", "198.18.109.0/24")
	tn.confDir = filepath.Join(dir, "net.d") // not there yet: nri-cni waits
	cfgFile := filepath.Join(dir, "cni.json")
	writeJSON(t, cfgFile, tn.config())

	rt, stopRuntime := startSocketRuntime(t, sock)
	out := &logBuffer{}
	cmd := exec.Command(nriCNIBinary, "-config", cfgFile, "-socket", sock, "-http-address", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	})
	base := "http://" + testutil.LoggedAddress(t, out, "serving /healthz, /readyz and /metrics", 20*time.Second, exited)
	want := func(step, path string, code int, has ...string) {
		t.Helper()
		got, body := testutil.HTTPGet(t, base+path)
		if got != code {
			t.Errorf("%s: GET %s = %d %q, want %d", step, path, got, body, code)
		}
		for _, h := range has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: GET %s: body does not contain %q:\n%s", step, path, h, body)
			}
		}
	}
	readyIs := func(code int) func() bool {
		return func() bool { got, _ := testutil.HTTPGet(t, base+"/readyz"); return got == code }
	}

	testutil.WaitFor(t, "nri-cni to wait for its network", 20*time.Second, func() bool {
		return strings.Contains(out.String(), "waiting for a CNI network configuration")
	})
	want("waiting", "/healthz", 200, "ok")
	want("waiting", "/readyz", 503, "nri-cni: not connected to the runtime yet")
	want("waiting", "/metrics", 200, `nrinet_cni_errors_total{op="setup"} 0`, "nrinet_cni_setup_duration_seconds_count 0", "go_goroutines")

	if err := os.Mkdir(tn.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tn.writeConflist(t, "10-nrinet-test.conflist", tn.subnets...)
	waitJoined(t, rt, exited, out, "after the conflist was written")
	testutil.WaitFor(t, "/readyz to say ready", 20*time.Second, readyIs(200))
	pod, _ := newPod(t, 0)
	if _, err := rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	want("one pod", "/metrics", 200, "nrinet_cni_setup_duration_seconds_count 1", `nrinet_cni_errors_total{op="setup"} 0`)
	if err := rt.StopPodSandbox(context.Background(), &api.StopPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	want("pod stopped", "/metrics", 200, "nrinet_cni_teardown_duration_seconds_count 1")

	stopRuntime()
	testutil.WaitFor(t, "/readyz to say not ready", 20*time.Second, readyIs(503))
	want("runtime gone", "/readyz", 503, `plugin "10-cni": not connected to the runtime: `)
	want("runtime gone", "/healthz", 200, "ok")
}
