package runtime_test

// Tests of how the runtime supervises plugins: late and hanging plugins,
// launched plugins restarted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// TestSupervision_LatePluginKeptConnectedIsCleanedUp: a plugin that
// is late on RunPodSandbox and kept connected by its failure policy hears
// that the pod stops and is removed when the pod then fails (a later
// plugin refuses it), as it may have gone on setting the pod up.
func TestSupervision_LatePluginKeptConnectedIsCleanedUp(t *testing.T) {
	for _, policy := range []*api.FailurePolicy{
		{KeepConnected: true},
		{KeepConnected: true, FailRequest: true},
	} {
		t.Run(policy.String(), func(t *testing.T) {
			e := newEnv(t, runtime.WithRequestTimeout(300*time.Millisecond))
			late := &lateRun{ledger: newLedger(), release: make(chan struct{})}
			e.startPlugin(late, "10", "late", plugin.WithFailurePolicy(policy))
			defer close(late.release)
			refuser := newRecorder()
			refuser.fail["RunPodSandbox"] = errors.New("refused")
			e.startPlugin(refuser, "20", "refuser")

			pod := testPod(1)
			if _, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: pod}); err == nil {
				t.Fatal("RunPodSandbox succeeded; the test needs it to fail")
			}
			if !e.joined("10-late") {
				t.Fatal("the late plugin was dropped; its policy says keep_connected")
			}
			late.release <- struct{}{} // it finishes setting the pod up
			if !eventually(2*time.Second, func() bool {
				got := late.seenOf(pod.GetId())
				return slices.Contains(got, "stop") && slices.Contains(got, "remove")
			}) {
				t.Errorf("the late plugin, kept connected, never got StopPodSandbox and RemovePodSandbox for the failed pod: it saw %v",
					late.seenOf(pod.GetId()))
			}
		})
	}
}

// TestSupervision_LaunchedPluginIsRestarted: a pre-installed network plugin
// that dies is launched again, and NetworkReady comes back.
func TestSupervision_LaunchedPluginIsRestarted(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	for _, d := range []string{pluginDir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(pluginDir, "10-netplug")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "netplug.conf"), pj(v4net("198.18.0.5")), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	e := newEnv(t, runtime.WithPluginPath(pluginDir), runtime.WithPluginConfigPath(confDir),
		runtime.WithRequiredNetworkPlugins("netplug"), runtime.WithObserver(obs),
		runtime.WithRestartBackoff(10*time.Millisecond, 100*time.Millisecond))
	if ready, why := e.rt.NetworkReady(); !ready {
		t.Fatalf("network not ready after start: %s", why)
	}
	first := e.rt.Plugins()[0].Pid
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to be launched again", func() bool {
		ps := e.rt.Plugins()
		return len(ps) == 1 && ps[0].Pid != first
	})
	if ready, why := e.rt.NetworkReady(); !ready {
		t.Fatalf("network not ready after the restart: %s", why)
	}
	if got := e.rt.Plugins()[0].Restarts; got != 1 {
		t.Errorf("PluginInfo.Restarts = %d, want 1", got)
	}
	obs.mu.Lock()
	if fmt.Sprint(obs.restarts) != "[10-netplug]" {
		t.Errorf("observer saw restarts %v, want one of 10-netplug", obs.restarts)
	}
	obs.mu.Unlock()
	if !strings.Contains(e.logs.String(), "plugin exited; restarting it") {
		t.Errorf("the restart was not logged:\n%s", e.logs)
	}
	rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(1)})
	if err != nil || rec.GetNetwork().GetIps()[0] != "198.18.0.5" {
		t.Fatalf("RunPodSandbox after the restart = %v, %v", rec, err)
	}
}

// TestSupervision_HangingPluginWarnsOnce: a plugin that hangs on every status
// round is reported, not once per pod per round.
func TestSupervision_HangingPluginWarnsOnce(t *testing.T) {
	e := newEnv(t, runtime.WithStatusTimeout(20*time.Millisecond), runtime.WithStatusCacheTTL(0))
	e.startNetPlugin(netScript{Name: "hang", Idx: "10", Network: pj(v4net("198.18.0.5")), StatusSleep: time.Hour})
	var recs []*api.PodNetworkRecord
	for n := range 25 {
		rec, err := e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: netPod(n)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for range 4 {
		for n, rec := range recs {
			if _, err := e.rt.PodSandboxStatus(context.Background(), netPod(n), rec, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	warns := 0
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "10-hang") {
			warns++
		}
	}
	if warns > 3 {
		t.Errorf("%d warnings about the hanging plugin for 100 status rounds", warns)
	}
}
