package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// TestMain doubles as a pre-installed plugin: when the runtime launches
// the test binary from a plugin directory, it runs launchedPluginMain.
func TestMain(m *testing.M) {
	if os.Getenv(api.PluginNameEnv) != "" {
		launchedPluginMain()
		return
	}
	if sock := os.Getenv(uidProbeEnv); sock != "" {
		uidProbeMain(sock)
		return
	}
	if script := os.Getenv(netScriptEnv); script != "" {
		netPluginMain(script)
		return
	}
	os.Exit(m.Run())
}

// configEcho fails every RunPodSandbox with a message reporting its
// configuration and environment, so the test can read both from the error.
type configEcho struct{ config string }

func (c *configEcho) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c.config = config
	return 0, nil
}

func (c *configEcho) RunPodSandbox(context.Context, *api.PodSandbox) error {
	env := os.Environ()
	sort.Strings(env)
	return fmt.Errorf("config=%q env=%s", c.config, strings.Join(env, ","))
}

// configuredNet is a launched network plugin whose network is its
// configuration (protojson of api.PodSandboxNetwork).
type configuredNet struct{ net *api.PodSandboxNetwork }

func (c *configuredNet) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c.net = parseNet(json.RawMessage(config))
	return 0, nil
}

func (c *configuredNet) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return c.net, nil
}

func launchedPluginMain() {
	fmt.Fprintln(os.Stderr, "hello from the launched plugin")
	var h any = &configEcho{}
	if os.Getenv(api.PluginNameEnv) == "netplug" {
		h = &configuredNet{}
	}
	s, err := plugin.New(h)
	if err == nil {
		err = s.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func TestRuntime_LaunchesPreinstalledPlugins(t *testing.T) {
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
	for _, name := range []string{"10-echo", "badname"} {
		if err := os.Symlink(self, filepath.Join(pluginDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(confDir, "echo.conf"), []byte("subnet: 198.18.0.0/24"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A WASM plugin, which nrinet does not run.
	if err := os.WriteFile(filepath.Join(pluginDir, "20-filter.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, runtime.WithPluginPath(pluginDir), runtime.WithPluginConfigPath(confDir), runtime.WithoutExternalPlugins())

	plugins := e.rt.Plugins()
	if len(plugins) != 1 || plugins[0].Name != "10-echo" || plugins[0].Kind != "launched" || plugins[0].Pid == 0 {
		t.Fatalf("plugins = %+v, want the launched 10-echo", plugins)
	}
	_, err = e.rt.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: testPod(1)})
	var perr *runtime.PluginError
	if !errors.As(err, &perr) || perr.Plugin != "10-echo" {
		t.Fatalf("error = %v, want one from 10-echo", err)
	}
	want := `config="subnet: 198.18.0.0/24" env=NRI_PLUGIN_IDX=10,NRI_PLUGIN_NAME=echo,NRI_PLUGIN_SOCKET=3`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("plugin reported %q, want %q", err, want)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "hello from the launched plugin") || !strings.Contains(logs, "plugin=10-echo") {
		t.Errorf("plugin's stderr was not logged under its name:\n%s", logs)
	}
	if !strings.Contains(logs, "skipping badly named executable") || !strings.Contains(logs, "badname") {
		t.Errorf("badly named executable was not reported:\n%s", logs)
	}
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "WASM plugins are not supported") || !strings.Contains(logs, "20-filter.wasm") {
		t.Errorf("the WASM plugin was not reported as an error naming it:\n%s", logs)
	}
}
