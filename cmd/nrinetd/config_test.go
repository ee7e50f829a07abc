package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFromBytes(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		check      func(Config) bool
		err        string
	}{
		{"empty is defaults", "", func(c Config) bool {
			d := DefaultConfig()
			return c.CRISocket == d.CRISocket && c.StateDir == d.StateDir && c.StatusTimeout == Duration(250*time.Millisecond)
		}, ""},
		{"values", `
cri_socket = "/run/x.sock"
required_network_plugins = ["podnet", "20-ipv6"]
status_timeout = "100ms"
status_cache_ttl = "0s"
nri_socket = ""
`, func(c Config) bool {
			return c.CRISocket == "/run/x.sock" && slices.Equal(c.RequiredNetworkPlugins, []string{"podnet", "20-ipv6"}) &&
				c.StatusTimeout == Duration(100*time.Millisecond) && c.StatusCacheTTL == 0 && c.NRISocket == ""
		}, ""},
		{"validator", `
[validator]
enable = true
reject_namespace_adjustment = true
required_plugins = ["podnet"]
`, func(c Config) bool {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromBytes([]byte(tc.toml))
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

func TestContribConfigIsValid(t *testing.T) {
	c, err := FromFile(filepath.Join("..", "..", "contrib", "nrinetd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.RequiredNetworkPlugins, []string{"podnet"}) || c.MetricsAddress == "" {
		t.Errorf("contrib/nrinetd.toml = %+v", c)
	}
}

func TestParseFlags_OverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nrinetd.toml")
	os.WriteFile(path, []byte("cri_socket = \"/from/file.sock\"\nstate_dir = \"/from/file\"\nlog_level = \"debug\"\n"), 0o644)
	o, err := parseFlags([]string{"-config", path, "-state-dir", "/from/flag", "-required-network-plugins", "podnet, cni",
		"-status-timeout", "1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.config
	if c.CRISocket != "/from/file.sock" || c.StateDir != "/from/flag" || c.LogLevel != "debug" ||
		!slices.Equal(c.RequiredNetworkPlugins, []string{"podnet", "cni"}) || c.StatusTimeout != Duration(time.Second) {
		t.Errorf("config = %+v", c)
	}
	if _, err := parseFlags([]string{"-config", filepath.Join(t.TempDir(), "missing.toml")}, io.Discard); err == nil {
		t.Error("a missing -config file was accepted")
	}
	if _, err := parseFlags([]string{"-config", path, "-status-timeout", "0s"}, io.Discard); err == nil {
		t.Error("a zero status timeout was accepted")
	}
}

func FuzzFromBytes(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("..", "..", "contrib", "nrinetd.toml"))
	f.Add(b)
	f.Add([]byte(`status_timeout = "1s"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := FromBytes(b)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("FromBytes accepted a configuration Validate refuses: %v", err)
			}
			c.runtimeOptions()
		}
	})
}
