package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/nrinet/nrinet/validator"
)

func TestFromBytes(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		check      func(daemonConfig) bool
		err        string
	}{
		{"empty is defaults", "", func(c daemonConfig) bool {
			d := defaultConfig()
			return c.CRISocket == d.CRISocket && c.StateDir == d.StateDir && c.StatusTimeout == duration(250*time.Millisecond)
		}, ""},
		{"values", `
cri_socket = "/run/x.sock"
required_network_plugins = ["podnet", "20-ipv6"]
status_timeout = "100ms"
status_cache_ttl = "0s"
nri_socket = ""
`, func(c daemonConfig) bool {
			return c.CRISocket == "/run/x.sock" && slices.Equal(c.RequiredNetworkPlugins, []string{"podnet", "20-ipv6"}) &&
				c.StatusTimeout == duration(100*time.Millisecond) && c.StatusCacheTTL == 0 && c.NRISocket == ""
		}, ""},
		{"validator", `
[validator]
enable = true
reject_namespace_adjustment = true
required_plugins = ["podnet"]
`, func(c daemonConfig) bool {
			return c.Validator.Enable && c.Validator.RejectNamespaceAdjustment && slices.Equal(c.Validator.RequiredPlugins, []string{"podnet"}) &&
				len(c.runtimeOptions()) > 0
		}, ""},
		{"bad validator", "[validator]\nenable = true\nrequired_plugins = [\"two words\"]\n", nil, `[validator]`},
		{"unknown key", `cri_sock = "/x"`, nil, `unknown configuration keys "cri_sock"`},
		{"bad duration", `status_timeout = "soon"`, nil, `soon`},
		{"negative timeout", `status_timeout = "-1s"`, nil, "status_timeout -1s is not positive"},
		{"relative state dir", `state_dir = "state"`, nil, `state_dir "state" is not an absolute path`},
		{"family", `family_preference = "ipv5"`, nil, `family_preference "ipv5"`},
		{"policy", `conflict_policy = "merge"`, nil, `conflict_policy "merge"`},
		{"level", `log_level = "loud"`, nil, `log_level "loud"`},
		{"HTTP address without a port", `http_address = "127.0.0.1"`, nil, `http_address: address "127.0.0.1": missing port`},
		{"deprecated name of the HTTP address", `metrics_address = "127.0.0.1:9464"`, func(c daemonConfig) bool {
			return c.HTTPAddress == "127.0.0.1:9464" && slices.Equal(c.deprecated, []string{"the configuration key metrics_address is deprecated: use http_address"})
		}, ""},
		{"both names of the HTTP address", "http_address = \":1\"\nmetrics_address = \":2\"\n", nil, `http_address ":1" and metrics_address ":2" (its deprecated name) set different values`},
		{"deprecated name of the HTTP address, without a port", `metrics_address = "127.0.0.1"`, nil, `http_address: address "127.0.0.1": missing port`},
		{"bad required plugin", `required_network_plugins = ["two words"]`, nil, `required_network_plugins "two words": want NAME or NN-NAME`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tc.toml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("FromBytes = %+v, %v", c, err)
			}
		})
	}
}

// TestContribConfigIsValid: contrib/nrinetd.toml, shipped in the release
// as the example of every key, is valid and sets every key of nrinetd's
// own names (containerd's aliases are only listed in its header).
func TestContribConfigIsValid(t *testing.T) {
	path := filepath.Join("..", "..", "contrib", "nrinetd.toml")
	c, err := readConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.RequiredNetworkPlugins, []string{"podnet"}) || c.HTTPAddress == "" || len(c.deprecated) > 0 {
		t.Errorf("contrib/nrinetd.toml = %+v", c)
	}
	var set map[string]any
	if _, err := toml.DecodeFile(path, &set); err != nil {
		t.Fatal(err)
	}
	for _, table := range []struct {
		typ  reflect.Type
		keys map[string]any
	}{{reflect.TypeFor[daemonConfig](), set}, {reflect.TypeFor[validator.Config](), set["validator"].(map[string]any)}} {
		for f := range table.typ.Fields() {
			if key := f.Tag.Get("toml"); key != "" && key != "-" {
				if _, ok := table.keys[key]; !ok {
					t.Errorf("%s does not set %s (%s.%s)", path, key, table.typ, f.Name)
				}
			}
		}
	}
}

func TestParseFlags_OverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nrinetd.toml")
	os.WriteFile(path, []byte("cri_socket = \"/from/file.sock\"\nstate_dir = \"/from/file\"\nlog_level = \"debug\"\n"), 0o644)
	o, err := parse("-config", path, "-state-dir", "/from/flag", "-required-network-plugins", "podnet, cni",
		"-status-timeout", "1s")
	if err != nil {
		t.Fatal(err)
	}
	c := o.config
	if c.CRISocket != "/from/file.sock" || c.StateDir != "/from/flag" || c.LogLevel != "debug" ||
		!slices.Equal(c.RequiredNetworkPlugins, []string{"podnet", "cni"}) || c.StatusTimeout != duration(time.Second) {
		t.Errorf("config = %+v", c)
	}
	if _, err := parse("-config", filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("a missing -config file was accepted")
	}
	if _, err := parse("-config", path, "-status-timeout", "0s"); err == nil {
		t.Error("a zero status timeout was accepted")
	}
}

// parse is nrinetd's parseFlags of args.
func parse(args ...string) (options, error) {
	var (
		o        options
		f        daemonConfig
		required string
	)
	err := parseFlags(command(&o, &f, &required), &o, &f, &required, args)
	return o, err
}

// TestParseFlags_HTTPAddress: -http-address, and its deprecated name
// -metrics-address, noted for the log; both override the file's.
func TestParseFlags_HTTPAddress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nrinetd.toml")
	os.WriteFile(path, []byte("metrics_address = \"127.0.0.1:1\"\n"), 0o644)
	for _, tc := range []struct {
		args       []string
		want       string
		deprecated []string
	}{
		{[]string{"-config", path}, "127.0.0.1:1", []string{"the configuration key metrics_address is deprecated: use http_address"}},
		{[]string{"-config", path, "-http-address", ":2"}, ":2", []string{"the configuration key metrics_address is deprecated: use http_address"}},
		{[]string{"-config", path, "-metrics-address", ":3"}, ":3", []string{"-metrics-address is deprecated: use -http-address", "the configuration key metrics_address is deprecated: use http_address"}},
	} {
		o, err := parse(tc.args...)
		if err != nil || o.config.HTTPAddress != tc.want || !slices.Equal(o.deprecated, tc.deprecated) {
			t.Errorf("nrinetd %q: HTTP address %q, deprecated %q, %v; want %q, %q", tc.args, o.config.HTTPAddress, o.deprecated, err, tc.want, tc.deprecated)
		}
		// The configuration crictl info shows (cri.WithStatusInfo).
		if b, err := json.Marshal(o.config); err != nil || !strings.Contains(string(b), `"httpAddress":"`+tc.want+`"`) || strings.Contains(string(b), "deprecated") {
			t.Errorf("the configuration in JSON: %s, %v; want httpAddress %q", b, err, tc.want)
		}
	}
}

func FuzzFromBytes(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("..", "..", "contrib", "nrinetd.toml"))
	f.Add(b)
	f.Add([]byte(`status_timeout = "1s"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("FromBytes accepted a configuration Validate refuses: %v", err)
			}
			c.runtimeOptions()
		}
	})
}

// TestFromBytes_ContainerdKeys: containerd's NRI key names are accepted
// for nrinetd's own; both names for one setting must agree.
func TestFromBytes_ContainerdKeys(t *testing.T) {
	d := defaultConfig()
	type want struct {
		socket, pluginDir, configDir string
		registration, request        time.Duration
	}
	defaults := want{d.NRISocket, d.PluginDir, d.PluginConfigDir, time.Duration(d.RegistrationTimeout), time.Duration(d.RequestTimeout)}
	for _, tc := range []struct {
		name, toml string
		want       want
		err        []string // substrings of the error
	}{
		{name: "neither", toml: "", want: defaults},
		{name: "containerd's names", toml: `
socket_path = "/run/containerd/nri.sock"
plugin_path = "/usr/lib/nri/plugins"
plugin_config_path = "/etc/containerd/nri/conf.d"
plugin_registration_timeout = "7s"
plugin_request_timeout = "3s"
`, want: want{"/run/containerd/nri.sock", "/usr/lib/nri/plugins", "/etc/containerd/nri/conf.d", 7 * time.Second, 3 * time.Second}},
		{name: "nrinetd's names", toml: `
nri_socket = "/run/a.sock"
plugin_dir = "/a/plugins"
plugin_config_dir = "/a/conf.d"
registration_timeout = "7s"
request_timeout = "3s"
`, want: want{"/run/a.sock", "/a/plugins", "/a/conf.d", 7 * time.Second, 3 * time.Second}},
		{name: "both, the same values", toml: `
nri_socket = "/run/a.sock"
socket_path = "/run/a.sock"
plugin_dir = "/a/plugins"
plugin_path = "/a/plugins"
request_timeout = "3s"
plugin_request_timeout = "3000ms"
`, want: want{"/run/a.sock", "/a/plugins", d.PluginConfigDir, time.Duration(d.RegistrationTimeout), 3 * time.Second}},
		{name: "disable_connections", toml: "disable_connections = true\n", want: want{"", d.PluginDir, d.PluginConfigDir, defaults.registration, defaults.request}},
		{name: "disable_connections with an empty socket", toml: "disable_connections = true\nnri_socket = \"\"\n", want: want{"", d.PluginDir, d.PluginConfigDir, defaults.registration, defaults.request}},
		{name: "disable_connections = false", toml: "disable_connections = false\nsocket_path = \"/run/b.sock\"\n", want: want{"/run/b.sock", d.PluginDir, d.PluginConfigDir, defaults.registration, defaults.request}},
		{name: "socket differs", toml: "nri_socket = \"/run/a.sock\"\nsocket_path = \"/run/b.sock\"\n",
			err: []string{`nri_socket "/run/a.sock" and socket_path "/run/b.sock"`}},
		{name: "plugin dir differs", toml: "plugin_dir = \"/a\"\nplugin_path = \"/b\"\n", err: []string{`plugin_dir "/a" and plugin_path "/b"`}},
		{name: "config dir differs", toml: "plugin_config_dir = \"/a\"\nplugin_config_path = \"/b\"\n", err: []string{`plugin_config_dir "/a" and plugin_config_path "/b"`}},
		{name: "registration timeout differs", toml: "registration_timeout = \"5s\"\nplugin_registration_timeout = \"6s\"\n",
			err: []string{"registration_timeout 5s and plugin_registration_timeout 6s"}},
		{name: "request timeout differs", toml: "request_timeout = \"2s\"\nplugin_request_timeout = \"1s\"\n",
			err: []string{"request_timeout 2s and plugin_request_timeout 1s"}},
		{name: "every conflict reported", toml: "plugin_dir = \"/a\"\nplugin_path = \"/b\"\nrequest_timeout = \"2s\"\nplugin_request_timeout = \"1s\"\n",
			err: []string{`plugin_dir "/a" and plugin_path "/b"`, "request_timeout 2s and plugin_request_timeout 1s"}},
		{name: "disabled, yet a socket", toml: "disable_connections = true\nsocket_path = \"/run/b.sock\"\n",
			err: []string{`disable_connections = true and socket_path "/run/b.sock"`}},
		{name: "disabled, yet nri_socket", toml: "disable_connections = true\nnri_socket = \"/run/a.sock\"\n",
			err: []string{`disable_connections = true and nri_socket "/run/a.sock"`}},
		{name: "enabled, yet no socket", toml: "disable_connections = false\nnri_socket = \"\"\n",
			err: []string{`disable_connections = false and nri_socket ""`}},
		{name: "bad containerd timeout", toml: "plugin_request_timeout = \"-1s\"\n", err: []string{"request_timeout -1s is not positive"}},
		{name: "wrong type", toml: "disable_connections = \"yes\"\n", err: []string{"disable_connections"}},
		{name: "other containerd keys stay unknown", toml: "disable = false\n", err: []string{`unknown configuration keys "disable"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tc.toml))
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("FromBytes = %+v, nil; want an error saying %q", c, tc.err)
				}
				for _, e := range tc.err {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q does not say %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{c.NRISocket, c.PluginDir, c.PluginConfigDir, time.Duration(c.RegistrationTimeout), time.Duration(c.RequestTimeout)}
			if got != tc.want {
				t.Errorf("FromBytes = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestConfig_LogFormat: log_format (-log-format) is text or json, as the
// plugins' -log-format; anything else is refused by Validate, naming it.
func TestConfig_LogFormat(t *testing.T) {
	for _, tc := range []struct {
		format  string
		wantErr bool
	}{{"", false}, {"text", false}, {"json", false}, {"xml", true}} {
		c := defaultConfig()
		c.LogFormat = tc.format
		err := c.Validate()
		if (err != nil) != tc.wantErr || tc.wantErr && !strings.Contains(err.Error(), `log_format "xml"`) {
			t.Errorf("log_format %q: Validate() = %v, want an error: %v", tc.format, err, tc.wantErr)
		}
	}
}
