package podnet_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// TestNRIPodnet_LateAnswerKeepsItConnected: nri-podnet's failure policy
// (keep_connected, fail_request). The plugin is stopped (SIGSTOP) while
// the runtime asks it to set a pod up: that pod's RunPodSandbox fails at
// the request timeout, and the plugin stays connected: once it runs again
// the same process (no relaunch, no rejoin) sets the next pod up, and the
// late pod is left holding no address. Without keep_connected the runtime
// disconnects it at the deadline, and the launched plugin exits.
func TestNRIPodnet_LateAnswerKeepsItConnected(t *testing.T) {
	const timeout = time.Second
	e := newEnv(t, false, runtime.WithRequestTimeout(timeout))
	before := e.rt.Plugins()
	if len(before) != 1 || before[0].Pid == 0 {
		t.Fatalf("plugins %+v, want nri-podnet alone with its pid", before)
	}
	proc, err := os.FindProcess(before[0].Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	cont := func() {
		if stopped {
			stopped = false
			if err := proc.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer cont()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	late, _ := e.pod(1)
	start := time.Now()
	_, err = e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: late})
	took := time.Since(start)
	if err == nil {
		t.Fatal("RunPodSandbox of a pod answered while the plugin was stopped")
	}
	if !errors.Is(err, context.DeadlineExceeded) || took < timeout {
		t.Errorf("RunPodSandbox failed after %v with %v, want the request timeout (%v)", took, err, timeout)
	}
	if !e.rt.PluginConnected("10-podnet") {
		t.Errorf("nri-podnet disconnected for one late answer:\n%s", e.logs)
	}
	cont()

	next, ns := e.pod(2)
	if _, err := e.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: next}); err != nil {
		t.Fatalf("RunPodSandbox of the next pod: %v\n%s", err, e.logs)
	}
	if addrs := podAddrs(t, ns); len(addrs) != 1 {
		t.Errorf("the next pod's addresses %v, want one", addrs)
	}
	after := e.rt.Plugins()
	if len(after) != 1 || after[0].Pid != before[0].Pid || after[0].Restarts != 0 {
		t.Errorf("plugins %+v after the late answer, want the same process (pid %d, no restart)", after, before[0].Pid)
	}
	// The late pod holds nothing: the runtime told the plugin to stop it
	// after the failed RunPodSandbox, and the plugin, running again, did
	// its setup (or not) and that teardown in turn.
	e.stop() // the plugin process exits
	if o := e.owners(); !slices.Equal(o, []string{next.Id}) {
		t.Errorf("addresses held by %v after the plugin stopped, want only the next pod's (%s)", o, next.Id)
	}
}
