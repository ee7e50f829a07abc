package cni_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/runtime"
)

// TestNRICNI_BadConfig starts the executable by hand with bad
// configurations and flags: it exits with status 2 (a usage or
// configuration error) and the reason.
func TestNRICNI_BadConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	dir := t.TempDir()
	badJSON := testutil.WriteFile(t, dir, "bad.json", `{"confDir": `)
	relative := testutil.WriteFile(t, dir, "relative.json", `{"confDir": "net.d"}`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad JSON", []string{"-config", badJSON}, []string{badJSON, "invalid configuration", "unexpected EOF"}},
		{"relative confDir", []string{"-config", relative}, []string{relative, `confDir "net.d" is not an absolute path`}},
		{"missing file", []string{"-config", filepath.Join(dir, "nonexistent")}, []string{"no such file"}},
		{"stray argument", []string{"-config", relative, "extra"}, []string{`unexpected arguments ["extra"]`}},
		{"HTTP address without a port", []string{"-http-address", "9465"}, []string{`-http-address "9465": missing port`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(nriCNIBinary, tc.args...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if status := testutil.RunStatus(t, cmd); status != 2 {
				t.Fatalf("nri-cni %s: exit status %d, want 2\n%s", strings.Join(tc.args, " "), status, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q does not contain %q", out.String(), w)
				}
			}
		})
	}
}

// TestPlugin_LaunchedWithoutNetworkConfig: a launched plugin whose
// configuration names an empty CNI configuration directory fails its
// Configure, so it does not join: the runtime's log says why, and the
// required network plugin being absent, the network is not ready. The
// runtime launches it again (with backoff); once a conflist is there it
// joins, and the network is ready.
func TestPlugin_LaunchedWithoutNetworkConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	cfg := loaderEnv(t)
	rt, logs := launchRuntime(t, cfg, runtime.WithRequiredNetworkPlugins("cni"),
		runtime.WithRestartBackoff(50*time.Millisecond, 500*time.Millisecond))
	if joined(rt) {
		t.Fatal("plugin joined with no CNI network configuration")
	}
	if want := "no *.conflist, *.conf, *.json file in " + cfg.ConfDir; !strings.Contains(logs.String(), want) {
		t.Errorf("runtime logs do not contain %q:\n%s", want, logs)
	}
	if ready, why := rt.NetworkReady(); ready || !strings.Contains(why, `required network plugin "cni" not connected`) {
		t.Errorf("NetworkReady = %v, %q; want not ready, the plugin not connected", ready, why)
	}
	testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
	testutil.WaitFor(t, "10-cni to join", 20*time.Second, func() bool { return joined(rt) })
	if ready, why := rt.NetworkReady(); !ready {
		t.Errorf("NetworkReady = false (%s) after the plugin joined", why)
	}
}
