package cniplugin_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestNRICNI_BadConfig starts the executable by hand with bad
// configurations: it exits non-zero with the reason.
func TestNRICNI_BadConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t) // nri-cni is built only then
	dir := t.TempDir()
	badJSON := writeFile(t, dir, "bad.json", `{"confDir": `)
	emptyConfDir := writeFile(t, dir, "empty.json", `{"confDir": "`+filepath.Join(dir, "net.d")+`", "binDirs": ["`+dir+`"]}`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad JSON", []string{"-config", badJSON}, []string{badJSON, "invalid configuration", "unexpected EOF"}},
		{"no network configuration", []string{"-config", emptyConfDir}, []string{"no *.conflist, *.conf, *.json file in " + filepath.Join(dir, "net.d")}},
		{"missing file", []string{"-config", filepath.Join(dir, "nonexistent")}, []string{"no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(nriCNIBinary, tc.args...).CombinedOutput()
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("nri-cni %s: %v, want a non-zero exit\n%s", strings.Join(tc.args, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output %q does not contain %q", out, w)
				}
			}
		})
	}
}

// TestPlugin_LaunchedWithBadConfig: a launched plugin whose configuration
// names an empty CNI configuration directory does not join, and the
// runtime's log says why.
func TestPlugin_LaunchedWithBadConfig(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	cfg := loaderEnv(t)
	rt, logs := launchRuntime(t, cfg)
	if joined(rt) {
		t.Fatal("plugin joined with no CNI network configuration")
	}
	if want := "no *.conflist, *.conf, *.json file in " + cfg.ConfDir; !strings.Contains(logs.String(), want) {
		t.Errorf("runtime logs do not contain %q:\n%s", want, logs)
	}
}
