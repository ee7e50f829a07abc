package pluginops_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// mainCaseEnv makes the test binary run pluginops.Main with the error of
// that case (TestMain), so that TestMain_ExitStatus sees a real exit.
const mainCaseEnv = "PLUGINOPS_TEST_MAIN_CASE"

var mainCases = map[string]func(c *cli.Command) error{
	"ok":       func(*cli.Command) error { return nil },
	"usage":    func(c *cli.Command) error { return c.Parse([]string{"x"}) },
	"refused":  func(*cli.Command) error { return fmt.Errorf("joining: %w", plugin.ErrNoNetworkExtension) },
	"failure":  func(*cli.Command) error { return errors.New("the bridge is gone") },
	"help":     func(c *cli.Command) error { return c.Parse([]string{"-help"}) },
	"wrapped":  func(*cli.Command) error { return fmt.Errorf("config: %w", cli.Usage(errors.New("bad JSON"))) },
	"nilusage": func(*cli.Command) error { return cli.Usage(nil) },
}

func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(mainCaseEnv); ok {
		c := cli.New("nri-test", "A test plugin.", "[flags]")
		pluginops.AddFlags(c, "test", "10")
		pluginops.Main(c, func() error { return mainCases[name](c) })
	}
	os.Exit(m.Run())
}

// TestMain_ExitStatus: the plugin commands' exit statuses, from a real
// process (the test binary re-executed): 0, 2 for usage and configuration
// errors, 0 with the usage on standard output for -help, 3 for a refused
// runtime, 1 otherwise; failures are one line on standard error, after
// the command's name.
func TestMain_ExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name           string
		status         int
		stderr, stdout string
	}{
		{"ok", 0, "", ""},
		{"usage", 2, `nri-test: unexpected arguments ["x"] (run 'nri-test -help' for usage)`, ""},
		{"refused", 3, "nri-test: joining: plugin: ", ""},
		{"failure", 1, "nri-test: the bridge is gone", ""},
		{"help", 0, "", "Usage:\n  nri-test [flags]\n\nA test plugin.\n\nFlags:\n"},
		{"wrapped", 2, "nri-test: config: bad JSON", ""},
		{"nilusage", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainCaseEnv+"="+tc.name)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			status := testutil.RunStatus(t, cmd)
			lines := strings.Count(stderr.String(), "\n")
			if status != tc.status || !strings.HasPrefix(stderr.String(), tc.stderr) || (tc.stderr == "") != (lines == 0) || lines > 1 ||
				!strings.HasPrefix(stdout.String(), tc.stdout) || tc.stdout == "" && stdout.Len() > 0 {
				t.Errorf("exit status %d, stderr %q, stdout %q; want %d, %q and %q", status, stderr.String(), stdout.String(), tc.status, tc.stderr, tc.stdout)
			}
		})
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
			c := cli.New("x", "")
			o := pluginops.AddFlags(c, "podnet", "10")
			if err := c.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			s, err := plugin.New(runOnly{}, o.Identity()...)
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
