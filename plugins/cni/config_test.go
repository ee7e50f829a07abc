package cni_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

func TestConfigFromBytes(t *testing.T) {
	def := cni.DefaultConfig()
	for _, tc := range []struct {
		name, in string
		want     *cni.Config
		err      string
	}{
		{name: "empty", in: "", want: &def},
		{name: "empty object", in: "{}", want: &def},
		{name: "partial", in: `{"confDir": "/etc/x", "network": "n"}`,
			want: &cni.Config{ConfDir: "/etc/x", BinDirs: def.BinDirs, CacheDir: def.CacheDir, Network: "n"}},
		{name: "full", in: `{"confDir": "/a", "binDirs": ["/b", "/c"], "cacheDir": "/d", "network": "n"}`,
			want: &cni.Config{ConfDir: "/a", BinDirs: []string{"/b", "/c"}, CacheDir: "/d", Network: "n"}},
		{name: "bad JSON", in: `{"confDir": `, err: "unexpected EOF"},
		{name: "unknown field", in: `{"confdirs": "/a"}`, err: `unknown field "confdirs"`},
		{name: "trailing data", in: `{} {}`, err: "data after the JSON object"},
		{name: "relative dir", in: `{"binDirs": ["bin"]}`, err: `binDirs entry "bin" is not an absolute path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cni.ConfigFromBytes([]byte(tc.in))
			if tc.err != "" {
				mustContain(t, err, tc.err)
				if !errors.Is(err, cni.ErrInvalidConfig) {
					t.Errorf("error %v does not wrap ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ConfDir != tc.want.ConfDir || got.CacheDir != tc.want.CacheDir || got.Network != tc.want.Network ||
				!slices.Equal(got.BinDirs, tc.want.BinDirs) {
				t.Errorf("config = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConfigFromFile_NamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "10-cni.conf")
	os.WriteFile(path, []byte(`{"confDir": 1}`), 0o644)
	_, err := cni.ConfigFromFile(path)
	mustContain(t, err, path, "confDir")
}

// loaderEnv is a configuration directory and fake plugins bridge,
// host-local and loopback.
func loaderEnv(t *testing.T) cni.Config {
	return cni.Config{
		ConfDir:  t.TempDir(),
		BinDirs:  []string{t.TempDir(), fakePluginDir(t, "bridge", "host-local", "loopback")},
		CacheDir: t.TempDir(),
	}
}

const (
	listA = `{"cniVersion": "1.0.0", "name": "net-a", "plugins": [{"type": "bridge"}, {"type": "loopback"}]}`
	confB = `{"cniVersion": "1.0.0", "name": "net-b", "type": "bridge", "ipam": {"type": "host-local"}}`
)

func TestLoadNetwork_PicksLikeContainerd(t *testing.T) {
	cfg := loaderEnv(t)
	a := testutil.WriteFile(t, cfg.ConfDir, "20-a.conflist", listA)
	b := testutil.WriteFile(t, cfg.ConfDir, "10-b.conf", confB)
	testutil.WriteFile(t, cfg.ConfDir, "00-ignored.txt", "not a configuration")
	ctx := context.Background()

	n, err := cni.LoadNetwork(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n.File != b || n.List.Name != "net-b" || len(n.List.Plugins) != 1 || n.List.CNIVersion != "1.0.0" {
		t.Errorf("first file: got %s, network %q with %d plugins; want %s wrapped into a list of one", n.File, n.List.Name, len(n.List.Plugins), b)
	}

	cfg.Network = "net-a"
	if n, err = cni.LoadNetwork(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if n.File != a || n.List.Name != "net-a" || len(n.List.Plugins) != 2 {
		t.Errorf("by name: got %s, network %q with %d plugins", n.File, n.List.Name, len(n.List.Plugins))
	}
}

func TestLoadNetwork_Errors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		network string
		is      error
		want    []string // {dir} and {file} are replaced
	}{
		{name: "empty dir", is: cni.ErrNoNetworkConfig,
			want: []string{"no *.conflist, *.conf, *.json file in {dir}"}},
		{name: "bad JSON", files: map[string]string{"10-bad.conflist": `{"name": "x", "plugins": [`},
			is: cni.ErrInvalidNetworkConfig, want: []string{"{dir}/10-bad.conflist", "error parsing configuration list", "unexpected end of JSON input"}},
		{name: "bad JSON in a conf", files: map[string]string{"10-bad.conf": `{"name": "x" "type": "bridge"}`},
			is: cni.ErrInvalidNetworkConfig, want: []string{"{dir}/10-bad.conf", "invalid character"}},
		{name: "no type", files: map[string]string{"10-bad.conf": `{"cniVersion": "1.0.0", "name": "x"}`},
			is: cni.ErrInvalidNetworkConfig, want: []string{"{dir}/10-bad.conf", "missing 'type'"}},
		{name: "missing binary", files: map[string]string{"10-x.conflist": `{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "bridge"}, {"type": "nosuch"}]}`},
			is: cni.ErrPluginNotFound, want: []string{`plugin type "nosuch"`, `network "x"`, "{dir}/10-x.conflist", "{bin0}, {bin1}"}},
		{name: "unsupported version", files: map[string]string{"10-x.conflist": `{"cniVersion": "0.2.0", "name": "x", "plugins": [{"type": "bridge"}]}`},
			is: cni.ErrInvalidNetworkConfig, want: []string{`plugin type "bridge"`, `does not support cniVersion "0.2.0"`}},
		{name: "network not found", files: map[string]string{"10-a.conflist": listA}, network: "net-z",
			is: cni.ErrNetworkNotFound, want: []string{`no file in {dir} defines network "net-z"`}},
		{name: "bad file before the named one", files: map[string]string{"05-bad.json": `nope`, "10-a.conflist": listA}, network: "net-a",
			is: cni.ErrInvalidNetworkConfig, want: []string{"{dir}/05-bad.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loaderEnv(t)
			cfg.Network = tc.network
			for name, content := range tc.files {
				testutil.WriteFile(t, cfg.ConfDir, name, content)
			}
			_, err := cni.LoadNetwork(context.Background(), cfg)
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			for _, w := range tc.want {
				r := strings.NewReplacer("{dir}", cfg.ConfDir, "{bin0}", cfg.BinDirs[0], "{bin1}", cfg.BinDirs[1])
				mustContain(t, err, r.Replace(w))
			}
		})
	}
}

func TestLoadNetwork_MissingDir(t *testing.T) {
	cfg := loaderEnv(t)
	cfg.ConfDir = filepath.Join(cfg.ConfDir, "nonexistent")
	_, err := cni.LoadNetwork(context.Background(), cfg)
	if !errors.Is(err, cni.ErrNoNetworkConfig) {
		t.Errorf("error %v does not wrap ErrNoNetworkConfig", err)
	}
	mustContain(t, err, cfg.ConfDir)
}

func TestPlugin_Configure(t *testing.T) {
	ctx := context.Background()
	cfg := loaderEnv(t)
	testutil.WriteFile(t, cfg.ConfDir, "10-a.conflist", listA)
	p, err := cni.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Network() != nil {
		t.Fatal("network loaded before Configure")
	}
	if _, err := p.Configure(ctx, `{"confDir": 7}`, "rt", "v1"); !errors.Is(err, cni.ErrInvalidConfig) {
		t.Errorf("Configure with bad JSON: %v", err)
	}
	b, _ := json.Marshal(cfg)
	if _, err := p.Configure(ctx, string(b), "rt", "v1"); err != nil {
		t.Fatal(err)
	}
	if n := p.Network(); n == nil || n.List.Name != "net-a" {
		t.Fatalf("network after Configure = %+v", n)
	}

	// The plugin's own configuration (WithConfig) takes precedence over
	// the runtime's, which is ignored, however broken.
	empty := loaderEnv(t)
	if _, err := cni.New(ctx, cni.WithConfig(empty)); !errors.Is(err, cni.ErrNoNetworkConfig) {
		t.Errorf("New with an empty confDir: %v", err)
	}
	p, err = cni.New(ctx, cni.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(empty)
	for _, runtimeCfg := range []string{string(b), `{"confDir": 7}`, ""} {
		if _, err := p.Configure(ctx, runtimeCfg, "rt", "v1"); err != nil {
			t.Errorf("Configure with the runtime's config %s besides WithConfig's: %v", runtimeCfg, err)
		}
		if n := p.Network(); n == nil || n.List.Name != "net-a" {
			t.Errorf("network after Configure with the runtime's config %s = %+v, want WithConfig's", runtimeCfg, n)
		}
	}
}
