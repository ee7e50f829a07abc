package pluginops_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// mainCaseEnv makes the test binary run pluginops.Main with the error of
// that case (TestMain), so that TestMain_ExitStatus sees a real exit.
const mainCaseEnv = "PLUGINOPS_TEST_MAIN_CASE"

var mainCases = map[string]error{
	"ok":       nil,
	"usage":    pluginops.Usage(errors.New(`unexpected arguments ["x"]`)),
	"refused":  fmt.Errorf("joining: %w", plugin.ErrNoNetworkExtension),
	"failure":  errors.New("the bridge is gone"),
	"help":     flag.ErrHelp,
	"wrapped":  fmt.Errorf("config: %w", pluginops.Usage(errors.New("bad JSON"))),
	"nilusage": pluginops.Usage(nil),
}

func TestMain(m *testing.M) {
	if c, ok := os.LookupEnv(mainCaseEnv); ok {
		pluginops.Main("nri-test", func() error { return mainCases[c] })
	}
	os.Exit(m.Run())
}

// TestMain_ExitStatus: the plugin commands' exit statuses, from a real
// process (the test binary re-executed): 0, 2 for usage and configuration
// errors (and -help's flag.ErrHelp is 0), 3 for a refused runtime, 1
// otherwise; failures are printed after the command's name.
func TestMain_ExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		stderr string
	}{
		{"ok", 0, ""}, {"usage", 2, `nri-test: unexpected arguments ["x"]`}, {"refused", 3, "nri-test: joining"},
		{"failure", 1, "nri-test: the bridge is gone"}, {"help", 0, ""}, {"wrapped", 2, "nri-test: config: bad JSON"},
		{"nilusage", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainCaseEnv+"="+tc.name)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			status := testutil.RunStatus(t, cmd)
			if status != tc.status || !strings.Contains(stderr.String(), tc.stderr) || tc.stderr == "" && stderr.Len() > 0 {
				t.Errorf("exit status %d, stderr %q; want %d and %q", status, stderr.String(), tc.status, tc.stderr)
			}
		})
	}
}

func TestNoArgs(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	if err := fs.Parse([]string{"stray"}); err != nil {
		t.Fatal(err)
	}
	if err := pluginops.NoArgs(fs); pluginops.ExitCode(err) != pluginops.ExitUsage || !strings.Contains(err.Error(), "stray") {
		t.Errorf("NoArgs with a stray argument = %v (exit %d)", err, pluginops.ExitCode(err))
	}
	if err := pluginops.NoArgs(flag.NewFlagSet("y", flag.ContinueOnError)); err != nil {
		t.Errorf("NoArgs without arguments = %v", err)
	}
}

// TestIdentity: -name and -idx when given, else the runtime's
// NRI_PLUGIN_NAME and NRI_PLUGIN_IDX (read by the plugin library), else
// the defaults.
func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"defaults", nil, nil, "10-podnet"},
		{"flags", []string{"-name", "net", "-idx", "20"}, nil, "20-net"},
		{"from the runtime", nil, map[string]string{api.PluginNameEnv: "rt", api.PluginIdxEnv: "30"}, "30-rt"},
		{"flags over the runtime", []string{"-idx", "40"}, map[string]string{api.PluginNameEnv: "rt", api.PluginIdxEnv: "30"}, "40-rt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(api.PluginNameEnv, "")
			t.Setenv(api.PluginIdxEnv, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			name := fs.String("name", "podnet", "")
			idx := fs.String("idx", "10", "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			s, err := plugin.New(runOnly{}, pluginops.Identity(fs, *name, *idx, "podnet", "10")...)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Name(); got != tc.want {
				t.Errorf("name %q, want %q", got, tc.want)
			}
		})
	}
}

// runOnly is a plugin with one handler.
type runOnly struct{}

func (runOnly) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }
